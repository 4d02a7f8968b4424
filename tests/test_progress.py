"""The shared progress bar: widget in a Jupyter kernel, plain lines elsewhere, nothing when disabled."""

from __future__ import annotations

import io
import json
import os

import nbformat
import pytest

from kgrag_utils import progress as P
from kgrag_utils.errors import ConfigError, MissingDependencyError


@pytest.fixture(autouse=True)
def _no_mode_env(monkeypatch):
    monkeypatch.delenv(P.PROGRESS_ENV, raising=False)


def test_mode_outside_a_kernel_is_text_and_env_values_are_checked(monkeypatch):
    assert P.progress_mode() == "text"  # pytest is no Jupyter kernel
    monkeypatch.setenv(P.PROGRESS_ENV, "off")
    assert P.progress_mode() == "off"
    monkeypatch.setenv(P.PROGRESS_ENV, " Text ")
    assert P.progress_mode() == "text"
    monkeypatch.setenv(P.PROGRESS_ENV, "fancy")
    with pytest.raises(ConfigError, match="KGRAG_PROGRESS='fancy'"):
        P.progress_mode()


def test_auto_picks_widget_only_in_a_kernel_with_ipywidgets(monkeypatch):
    monkeypatch.setattr(P, "_in_jupyter_kernel", lambda: True)
    assert P.progress_mode() == "widget"
    monkeypatch.setattr(P, "_have_ipywidgets", lambda: False)
    assert P.progress_mode() == "text"  # no "IProgress not found": a text bar instead
    monkeypatch.setenv(P.PROGRESS_ENV, "widget")
    with pytest.raises(MissingDependencyError, match="ipywidgets"):
        P.progress_mode()


def test_text_bar_off_a_terminal_writes_plain_lines():
    out = io.StringIO()
    with P.progress_bar(total=500, desc="questions", unit="q", file=out) as bar:
        for _ in range(500):
            bar.update(1)
    text = out.getvalue()
    assert "\r" not in text and text.endswith("\n")
    lines = text.splitlines()
    # the first draw and the last one; the 498 updates in between fall inside LINE_INTERVAL_S
    assert 2 <= len(lines) <= 3, lines
    assert lines[0].startswith("questions:") and "0/500" in lines[0]
    assert "500/500" in lines[-1] and "100%" in lines[-1]
    assert len(set(lines)) == len(lines)


def test_text_bar_wraps_an_iterable_and_keeps_initial():
    out = io.StringIO()
    assert list(P.progress_bar(range(4), desc="it", file=out)) == [0, 1, 2, 3]
    assert "4/4" in out.getvalue().splitlines()[-1]
    out = io.StringIO()
    with P.progress_bar(total=10, initial=7, file=out) as bar:
        bar.update(3)
    assert "7/10" in out.getvalue().splitlines()[0] and "10/10" in out.getvalue().splitlines()[-1]


def test_disabled_bar_prints_nothing_but_accepts_updates(monkeypatch, capsys):
    out = io.StringIO()
    with P.progress_bar(total=3, file=out, enabled=False) as bar:
        bar.update(3)
        bar.set_postfix_str("x")
    assert list(P.progress_bar([1, 2], enabled=False)) == [1, 2]
    monkeypatch.setenv(P.PROGRESS_ENV, "off")
    with P.progress_bar(total=3, file=out) as bar:
        bar.update(3)
    assert out.getvalue() == "" and capsys.readouterr().err == ""


def test_line_writer_drops_carriage_returns_padding_and_repeats():
    out = io.StringIO()
    w = P.LineWriter(out)
    w.write("\r a 1/2   ")
    w.write("\r a 1/2")
    w.write("\r a 2/2\n")
    w.write("\n")
    assert out.getvalue() == " a 1/2\n a 2/2\n"


def test_children_get_text_mode_and_the_callers_value_comes_back(monkeypatch):
    with P.text_progress_in_children():
        with P.text_progress_in_children():
            assert os.environ[P.PROGRESS_ENV] == "text"
        assert os.environ[P.PROGRESS_ENV] == "text"
    assert P.PROGRESS_ENV not in os.environ
    monkeypatch.setenv(P.PROGRESS_ENV, "widget")  # a user's explicit choice is kept
    with P.text_progress_in_children():
        assert os.environ[P.PROGRESS_ENV] == "widget"
    assert os.environ[P.PROGRESS_ENV] == "widget"


WIDGET_MIME = "application/vnd.jupyter.widget-view+json"


def _execute(tmp_path, env_text: bool):
    """Execute a two-cell notebook in a real python3 kernel with papermill; returns (outputs, log text)."""
    import papermill as pm

    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(
        "from kgrag_utils.progress import progress_bar, progress_mode\n"
        "print('mode', progress_mode())\n"
        "for _ in progress_bar(range(3), desc='questions', unit='q'):\n"
        "    pass\n")]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    src, dst, log = tmp_path / "p.ipynb", tmp_path / "p.out.ipynb", tmp_path / "p.log"
    nbformat.write(nb, src)
    with open(log, "w", encoding="utf-8") as fh:
        if env_text:
            with P.text_progress_in_children():
                pm.execute_notebook(str(src), str(dst), kernel_name="python3", progress_bar=False,
                                    log_output=True, stdout_file=fh, stderr_file=fh)
        else:
            pm.execute_notebook(str(src), str(dst), kernel_name="python3", progress_bar=False,
                                log_output=True, stdout_file=fh, stderr_file=fh)
    out = nbformat.read(dst, as_version=4)
    return out.cells[0].outputs, log.read_text(encoding="utf-8")


@pytest.mark.slow
def test_a_kernel_started_by_the_runner_prints_lines_and_jupyter_gets_a_widget(tmp_path):
    outputs, log = _execute(tmp_path, env_text=True)
    assert not any(WIDGET_MIME in o.get("data", {}) for o in outputs)
    stdout = "".join(o.get("text", "") for o in outputs if o.get("name") == "stdout")
    stderr = "".join(o.get("text", "") for o in outputs if o.get("name") == "stderr")
    assert "mode text" in stdout and "\r" not in stderr
    assert stderr.splitlines()[0].startswith("questions:") and "3/3" in stderr.splitlines()[-1]
    assert "IProgress" not in log and "HBox" not in log and "3/3" in log

    outputs, _ = _execute(tmp_path, env_text=False)  # what JupyterLab's kernel does: a live widget
    assert "mode widget" in "".join(o.get("text", "") for o in outputs if o.output_type == "stream")
    widgets = [o for o in outputs if WIDGET_MIME in o.get("data", {})]
    assert widgets, json.dumps(outputs)[:500]
    assert not any("IProgress" in o.get("text", "") for o in outputs)


class _Stream(io.StringIO):
    def __init__(self, tty: bool):
        super().__init__()
        self.tty = tty

    def isatty(self):
        return self.tty


@pytest.mark.parametrize("tty", [True, False])
def test_the_kernels_stderr_is_logged_and_shown_only_on_a_terminal(monkeypatch, tty):
    from kgrag_utils.runner import kernel

    terminal, log = _Stream(tty), io.StringIO()
    monkeypatch.setattr(kernel.sys, "stderr", terminal)
    shown = kernel._ShownOnTerminal(log)
    shown.write("questions: 3/3\n")
    shown.flush()
    assert log.getvalue() == "questions: 3/3\n"
    assert terminal.getvalue() == ("questions: 3/3\n" if tty else "")
