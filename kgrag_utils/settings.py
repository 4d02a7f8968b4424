"""Where things live, resolved from the repository root (never the kernel's working directory).

Every directory can be overridden by an environment variable, so a notebook executed by
papermill in `notebooks/`, a test in a temporary folder and a user's shell all agree.

| what        | variable             | default                     |
|-------------|----------------------|-----------------------------|
| repo root   | KGRAG_ROOT           | folder holding pyproject.toml above this file |
| real data   | KGRAG_DATA_DIR       | <root>/data/real            |
| sample data | KGRAG_SAMPLE_DIR     | <root>/data/sample          |
| caches      | KGRAG_CACHE_DIR      | <root>/cache                |
| run records | KGRAG_RESULTS_DIR    | <root>/results              |
| figures     | KGRAG_FIGURES_DIR    | <root>/figures              |
| executed nb | KGRAG_RUNS_DIR       | <root>/runs                 |

Relative values of the variables are taken relative to the repository root.

CPU threads: `KGRAG_THREADS` for every component, `KGRAG_LLM_THREADS` for llama.cpp only; the default
fits the CPUs this process may use (affinity mask, cgroup quota, other load): kgrag_utils/threads.py.
"""

from __future__ import annotations

import errno
import os
from functools import lru_cache
from pathlib import Path

from .errors import ConfigError, StorageError, folder_message

_MARKERS = ("pyproject.toml",)


@lru_cache(maxsize=None)
def _find_root(start: str) -> Path:
    here = Path(start).resolve()
    for candidate in (here, *here.parents):
        if all((candidate / m).exists() for m in _MARKERS) and (candidate / "kgrag_utils").is_dir():
            return candidate
    raise ConfigError(
        "cannot find the repository root (a folder with pyproject.toml and kgrag_utils/) above "
        f"{here}: set KGRAG_ROOT to the checkout, or install the project with `pip install -e .`."
    )


def repo_root() -> Path:
    """The checkout's root folder (KGRAG_ROOT wins; else found from this file's location)."""
    env = os.environ.get("KGRAG_ROOT")
    if env:
        return Path(env).expanduser().resolve()
    return _find_root(str(Path(__file__).parent))


def _dir(var: str, default_rel: str, create: bool) -> Path:
    """The folder a variable names (or its default); with `create`, made now. A path where no folder can be
    (under /proc, a file, a file's child, a full or read-only disk) is one StorageError naming the variable."""
    value = os.environ.get(var)
    path = Path(value).expanduser() if value else Path(default_rel)
    if not path.is_absolute():
        path = repo_root() / path
    try:
        path = path.resolve()
        if create:
            path.mkdir(parents=True, exist_ok=True)
            if not path.is_dir():
                raise FileExistsError(errno.EEXIST, "not a folder", str(path))
    except OSError as exc:
        raise StorageError(folder_message(exc, path, var)) from None
    return path


def data_dir() -> Path:
    """Real benchmark copies (one sub-folder per dataset, as `kgrag data fetch` lays them out)."""
    return _dir("KGRAG_DATA_DIR", "data/real", create=False)


def sample_dir(create: bool = True) -> Path:
    """Generated sample data (the embedded default)."""
    return _dir("KGRAG_SAMPLE_DIR", "data/sample", create)


def cache_dir(sub: str | None = None, create: bool = True) -> Path:
    """Persistent caches (LLM responses, embeddings, assembled model files)."""
    base = _dir("KGRAG_CACHE_DIR", "cache", create)
    if sub:
        base = base / sub
        if create:
            try:
                base.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise StorageError(folder_message(exc, base, "KGRAG_CACHE_DIR")) from None
    return base


def results_dir(create: bool = True) -> Path:
    """Run records (one folder per run: run.json + examples.jsonl)."""
    return _dir("KGRAG_RESULTS_DIR", "results", create)


def figures_dir(create: bool = True) -> Path:
    """Figures written by the notebooks."""
    return _dir("KGRAG_FIGURES_DIR", "figures", create)


def runs_dir(create: bool = True) -> Path:
    """Executed notebooks and logs from the batch runner."""
    return _dir("KGRAG_RUNS_DIR", "runs", create)


def check_folders() -> None:
    """Make every folder a run writes (results, runs, cache, sample, figures) before a kernel starts: a variable
    naming a path where no folder can be is refused now, in one line naming it, not late inside a notebook."""
    for make in (results_dir, runs_dir, cache_dir, sample_dir, figures_dir):
        make()


def notebooks_dir() -> Path:
    return repo_root() / "notebooks"


def configs_dir() -> Path:
    return repo_root() / "configs"


def llm_threads() -> int:
    """llama.cpp CPU threads: `KGRAG_LLM_THREADS` if set, else the process's budget (kgrag_utils/threads.py)."""
    from .threads import llm_threads as _llm_threads

    return _llm_threads()


def describe() -> dict[str, str]:
    """All resolved locations, for printing at the top of a notebook."""
    return {
        "root": str(repo_root()),
        "data": str(data_dir()),
        "sample": str(sample_dir(create=False)),
        "cache": str(cache_dir(create=False)),
        "results": str(results_dir(create=False)),
        "figures": str(figures_dir(create=False)),
        "runs": str(runs_dir(create=False)),
    }
