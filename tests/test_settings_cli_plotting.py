"""Paths resolve from the repository root; the CLI reports errors in one line; figures are deterministic."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from kgrag_utils import cli, plotting, settings
from kgrag_utils.errors import ConfigError

ROOT = Path(__file__).resolve().parents[1]


def test_root_found_from_package_not_cwd(tmp_path, monkeypatch):
    monkeypatch.delenv("KGRAG_ROOT", raising=False)
    monkeypatch.chdir(tmp_path)
    assert settings.repo_root() == ROOT


def test_env_overrides_and_relative_values(tmp_path, monkeypatch):
    monkeypatch.setenv("KGRAG_RESULTS_DIR", str(tmp_path / "r"))
    assert settings.results_dir() == tmp_path / "r" and (tmp_path / "r").is_dir()
    monkeypatch.setenv("KGRAG_FIGURES_DIR", "figs_rel")
    monkeypatch.chdir(tmp_path)
    assert settings.figures_dir(create=False) == ROOT / "figs_rel"


def test_cache_subdir_created(tmp_path, monkeypatch):
    monkeypatch.setenv("KGRAG_CACHE_DIR", str(tmp_path / "c"))
    assert settings.cache_dir("llm") == tmp_path / "c" / "llm" and (tmp_path / "c" / "llm").is_dir()


def test_cli_paths_and_errors(capsys):
    assert cli.main(["paths"]) == 0
    assert "results" in capsys.readouterr().out
    assert cli.main(["run", "no_such_notebook"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("kgrag: error:") and err.count("\n") == 1
    assert cli.main(["run", "x", "-p", "novalue"]) == 2
    assert "name=value" in capsys.readouterr().err


def test_cli_value_parsing():
    from kgrag_utils.schema import cli_parameters

    defaults = {"a": 1, "b": 0.1, "c": False, "d": "x", "e": [0]}
    assert cli_parameters(["a=3", "b=0.5", "c=true", "d=hello", "e=[1, 2]"], [("nb.ipynb", defaults)]) == {
        "a": 3, "b": 0.5, "c": True, "d": "hello", "e": [1, 2]}


def test_save_figure_is_deterministic(tmp_path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    plotting.set_theme()
    digests = []
    for i in range(2):
        fig, ax = plt.subplots()
        ax.plot([0, 1, 2], [3, 1, 2], label="x")
        ax.legend()
        paths = plotting.save_figure(fig, "det", folder=tmp_path / str(i))
        plt.close(fig)
        digests.append([p.read_bytes() for p in paths])
    assert digests[0] == digests[1]
    assert {p.suffix for p in paths} == {".png", ".svg"}


def test_draw_graph_runs_on_triples(tmp_path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ax = plotting.draw_graph([("Film A", "directed_by", "Ann"), ("Film A", "starred_actors", "Bob")],
                             highlight_nodes=["Ann"])
    nodes = [t for t in ax.texts if t.get_gid() == "graph-node"]  # a node is a box holding its name
    assert len(nodes) == 3 and len(ax.patches) == 2  # three nodes, two arrows
    assert {'Ann', 'Bob', 'directed_by', 'starred_actors'} <= {t.get_text() for t in ax.texts}
    assert plotting.label_overlaps(ax.texts) == []
    plt.close("all")
    with pytest.raises(ValueError):
        plotting.save_figure(plt.figure(), "../escape", folder=tmp_path)


def test_cli_data_list_names_every_dataset_with_its_source(capsys):
    assert cli.main(["data", "list"]) == 0
    out = capsys.readouterr().out
    for name in ("metaqa-2hop", "factkg", "webqsp", "cwq", "iirc", "musique"):
        assert name in out
    factkg_line = out[out.index("factkg"):].splitlines()
    assert "kgrag data fetch factkg" in factkg_line[0] and "source: http" in factkg_line[1]


def test_llm_threads_from_the_environment(monkeypatch):
    """KGRAG_LLM_THREADS sets llama.cpp's threads; unset means the process's budget (kgrag_utils/threads.py);
    a bad value is refused naming the fix."""
    from kgrag_utils import threads

    monkeypatch.delenv("KGRAG_LLM_THREADS", raising=False)
    assert settings.llm_threads() == threads.budget().threads
    monkeypatch.setenv("KGRAG_LLM_THREADS", "1")
    assert settings.llm_threads() == 1
    for bad in ("0", "two", "-1"):
        monkeypatch.setenv("KGRAG_LLM_THREADS", bad)
        with pytest.raises(ConfigError, match="KGRAG_LLM_THREADS"):
            settings.llm_threads()
