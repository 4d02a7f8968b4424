"""The course material (kgrag_utils/course.py, docs/COURSE.md): each course notebook opens with its Colab badge and
an install cell that does nothing where the package is importable, and ends with at least three exercises, each
with a prompt, a cell for the reader and a hidden solution with its explanation. `assert_solutions_ran` is what the
notebook tests (tests/test_*_notebook.py, tests/test_notebooks.py) check on the copies the runner executed."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from kgrag_utils import course, settings

COURSE = [settings.notebooks_dir() / f"{stem}.ipynb" for stem in course.COURSE_NOTEBOOKS]
METHODS = [p for p in COURSE if not p.stem.startswith("00")]


def _nb(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


def _src(cell: dict) -> str:
    return "".join(cell["source"])


def _tags(cell: dict) -> list[str]:
    return cell.get("metadata", {}).get("tags", [])


def assert_solutions_ran(executed_notebook: str | Path, at_least: int = 3) -> None:
    """Every exercise of an executed notebook (the runner's copy under runs/) has a solution that ran to the end
    without an error output; the reader's cells ran too."""
    nb = _nb(Path(executed_notebook))
    found = course.exercises(nb)
    assert len(found) >= at_least, f"{executed_notebook}: {len(found)} exercises"
    for n, parts in found.items():
        for cell in parts["solution_code"] + parts["student"]:
            assert cell.get("execution_count") is not None, f"exercise {n}: a cell did not run"
            errors = [o for o in cell.get("outputs", []) if o.get("output_type") == "error"]
            assert not errors, f"exercise {n}: {errors[0].get('ename')}: {errors[0].get('evalue')}"
            assert cell.get("metadata", {}).get("papermill", {}).get("exception") in (None, False), f"exercise {n}"


@pytest.mark.parametrize("path", COURSE, ids=[p.stem for p in COURSE])
def test_course_notebook_has_exercises_with_hidden_solutions(path):
    nb = _nb(path)
    found = course.exercises(nb)
    assert len(found) >= 3, f"{path.name}: {len(found)} exercises (at least 3)"
    assert sorted(found) == list(range(1, len(found) + 1))
    last_other = max(i for i, c in enumerate(nb["cells"]) if not {"exercise", "solution"} & set(_tags(c)))
    first_exercise = min(i for i, c in enumerate(nb["cells"]) if {"exercise", "solution"} & set(_tags(c)))
    assert first_exercise > last_other, "the exercises come after everything else (the run record is finished first)"
    for n, parts in found.items():
        assert [len(parts[k]) for k in ("prompt", "student", "solution_code", "solution_text")] == [1, 1, 1, 1], n
        prompt = _src(parts["prompt"][0])
        assert "Change one thing" in prompt and "Predict" in prompt, f"exercise {n} asks for a prediction"
        code = parts["solution_code"][0]
        assert code["metadata"]["jupyter"]["source_hidden"] is True and code["metadata"]["cellView"] == "form"
        assert _src(code).startswith(f"#@title Solution {n}"), "Colab shows the title and hides the code"
        compile(_src(code), f"{path.name} solution {n}", "exec")
        compile(_src(parts["student"][0]), f"{path.name} exercise {n}", "exec")
        why = _src(parts["solution_text"][0])
        assert why.startswith("<details>") and why.rstrip().endswith("</details>"), "the explanation is folded"
        assert "savefig" not in _src(code) and "save_figure" not in _src(code), "solutions write no figure"
        assert "recorder" not in _src(code).replace("no recorder", ""), "solutions write no run record"


@pytest.mark.parametrize("path", COURSE, ids=[p.stem for p in COURSE])
def test_course_notebook_opens_with_the_badge_and_the_install_cell(path):
    nb = _nb(path)
    badge, install = nb["cells"][0], nb["cells"][1]
    assert _tags(badge) == ["colab-badge"] and _src(badge) == course.badge_source(path.stem)
    assert course.colab_url(path.stem) == (f"https://colab.research.google.com/github/{course.REPOSITORY}/blob/"
                                           f"{course.BRANCH}/notebooks/{path.name}")
    assert _tags(install) == ["install"] and _src(install) == course.install_cell_source()
    assert not install["outputs"] and install["execution_count"] is None
    params = [c for c in nb["cells"] if "parameters" in _tags(c)]
    assert len(params) == 1 and nb["cells"].index(params[0]) > 1  # still the one tagged cell of literals


def test_install_cell_does_nothing_where_the_package_is_importable(monkeypatch):
    ran = []
    monkeypatch.setattr(subprocess, "run", lambda *a, **k: ran.append(a))
    path_before = list(sys.path)
    exec(compile(course.install_cell_source(), "install cell", "exec"), {})
    assert ran == [] and sys.path == path_before


def test_install_cell_installs_from_the_clone_it_runs_in(monkeypatch):
    """A laptop with a clone but no install: the cell installs that clone (no second clone), then imports work."""
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "kgrag_utils" else real(name, *a))
    ran, roots = [], []
    monkeypatch.setattr(subprocess, "run", lambda *a, **k: ran.append(a))
    monkeypatch.setattr(course, "install", lambda root: roots.append(Path(root).resolve()))
    monkeypatch.setattr(sys, "path", list(sys.path))
    monkeypatch.chdir(settings.notebooks_dir())
    exec(compile(course.install_cell_source(), "install cell", "exec"), {})
    assert ran == [] and roots == [settings.repo_root().resolve()] and sys.path[0] == str(settings.repo_root().resolve())


def test_install_cell_clones_the_repository_elsewhere(monkeypatch, tmp_path):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "kgrag_utils" else real(name, *a))
    ran = []

    def fake_run(cmd, check):  # a clone that yields a checkout holding the package
        ran.append(cmd)
        (Path(cmd[-1]) / "kgrag_utils").mkdir(parents=True)

    monkeypatch.setattr(subprocess, "run", fake_run)
    monkeypatch.setattr(course, "install", lambda root: None)
    monkeypatch.setattr(sys, "path", list(sys.path))
    monkeypatch.chdir(tmp_path)
    exec(compile(course.install_cell_source(), "install cell", "exec"), {})
    assert ran == [["git", "clone", "--depth=1", f"https://github.com/{course.REPOSITORY}.git", course.CLONE_DIR]]


def test_install_commands_pick_the_extras_for_the_machine(tmp_path):
    gpu = course.install_commands(tmp_path, gpu=True, torch_installed=True, compiler=True)
    assert len(gpu) == 1 and gpu[0][-1] == f"{tmp_path.resolve()}[gpu,models]" and gpu[0][:3] == [sys.executable, "-m", "pip"]
    laptop = course.install_commands(tmp_path, gpu=False, torch_installed=False, compiler=True)
    assert laptop[0][-3:] == ["--index-url", course.CPU_TORCH_INDEX, "torch"]  # never a CUDA torch on a CPU
    assert laptop[1][-1] == f"{tmp_path.resolve()}[cpu,models,llamacpp]"
    no_compiler = course.install_commands(tmp_path, gpu=False, torch_installed=True, compiler=False)
    assert len(no_compiler) == 1 and no_compiler[0][-1].endswith("[cpu,models]")  # transformers decodes the GGUF
    extras = set(gpu[0][-1].split("[")[1].rstrip("]").split(",")) | {"cpu", "llamacpp"}
    pyproject = (settings.repo_root() / "pyproject.toml").read_text(encoding="utf-8")
    assert all(f"\n{e} = [" in pyproject for e in extras), "every extra named exists in pyproject.toml"


def test_install_runs_the_commands_in_order(monkeypatch, tmp_path, capsys):
    ran = []
    monkeypatch.setattr(course, "has_gpu", lambda: True)
    monkeypatch.setattr(course.subprocess, "run", lambda cmd, check: ran.append((cmd, check)))
    course.install(tmp_path)
    assert [c[-1] for c, _ in ran] == [f"{tmp_path.resolve()}[gpu,models]"] and all(check for _, check in ran)
    assert course.COLAB_GPU_PRESET in capsys.readouterr().out


def test_the_suggested_gpu_preset_is_a_4bit_preset():
    from kgrag_utils.llm.presets import get_preset

    assert get_preset(course.COLAB_GPU_PRESET).quantization == "4bit"


def test_sync_puts_badge_and_install_on_top_once_and_leaves_other_cells_alone():
    nb = {"cells": [{"cell_type": "markdown", "id": "a", "metadata": {}, "source": ["# title"]}], "metadata": {},
          "nbformat": 4, "nbformat_minor": 5}
    once = course.sync_top_cells(json.loads(json.dumps(nb)), "01_simgrag")
    twice = course.sync_top_cells(json.loads(json.dumps(once)), "01_simgrag.ipynb")
    assert once == twice and [c["id"] for c in once["cells"]] == ["01-colab-badge", "01-install", "a"]
    assert once["cells"][2] == nb["cells"][0]
    nbformat = pytest.importorskip("nbformat")
    nbformat.validate(nbformat.from_dict(once))


def test_exercises_are_grouped_by_number_and_role():
    def cell(kind, *tags):
        return {"cell_type": kind, "metadata": {"tags": list(tags)}, "source": []}

    nb = {"cells": [cell("markdown", "exercise"), cell("markdown", "exercise", "exercise-2"), cell("code", "exercise", "exercise-2"),
                    cell("code", "solution", "exercise-2"), cell("markdown", "solution", "exercise-2"),
                    cell("code", "solution", "exercise-1"), cell("code")]}
    found = course.exercises(nb)
    assert list(found) == [1, 2]
    assert [len(found[2][k]) for k in ("prompt", "student", "solution_code", "solution_text")] == [1, 1, 1, 1]
    assert [len(found[1][k]) for k in ("prompt", "student", "solution_code", "solution_text")] == [0, 0, 1, 0]


def test_course_page_lists_every_course_notebook_and_its_exercises():
    page = (settings.repo_root() / "docs" / "COURSE.md").read_text(encoding="utf-8")
    for path in COURSE:
        assert f"notebooks/{path.name}" in page, path.name
        for n, parts in course.exercises(_nb(path)).items():
            title = _src(parts["prompt"][0]).splitlines()[0].split("·", 1)[1].strip()
            assert title in page, f"{path.name} exercise {n} ({title}) is listed in docs/COURSE.md"
    assert "docs/COURSE.md" in (settings.repo_root() / "README.md").read_text(encoding="utf-8")
    assert "data/FORMATS.md" in page
