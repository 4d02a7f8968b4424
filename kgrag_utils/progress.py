"""One progress bar for every loop: a live widget in JupyterLab, plain lines in papermill logs and pipes.

    from kgrag_utils.progress import progress_bar
    with progress_bar(total=len(todo), desc="SimGRAG", unit="q", enabled=progress) as bar:
        for chunk in chunks:
            ...
            bar.update(len(chunk))
    for q in progress_bar(questions, desc="density sweep"):   # or wrap an iterable

The mode comes from the `KGRAG_PROGRESS` environment variable (`PROGRESS_ENV`):
- `auto` (the default): a widget (`tqdm.notebook`) inside a Jupyter kernel when ipywidgets is installed,
  text otherwise. The batch runner sets `text` for the kernels it starts, because nobody watches a
  papermill kernel's widgets and its log would only hold their reprs.
- `text`: tqdm's text bar. On a terminal it redraws in place; anywhere else (a notebook cell run by
  papermill, a log file, a pipe) it writes one plain line at most every `LINE_INTERVAL_S` seconds
  and a last line when the loop ends, never a carriage return.
- `widget`: always the widget (fails with a one-line error when ipywidgets is missing).
- `off`: no bar at all.
`enabled=False` (a caller's `progress=False`) gives a bar that does nothing, so loops need no `if bar`.
"""

from __future__ import annotations

import os
import sys
import threading
from contextlib import contextmanager
from typing import Any, Iterable, Iterator

from .errors import ConfigError, MissingDependencyError

PROGRESS_ENV = "KGRAG_PROGRESS"
MODES = ("auto", "text", "widget", "off")
DEFAULT_MODE = "auto"
LINE_INTERVAL_S = 10.0  # text bars that are not on a terminal print at most one line per this many seconds


def progress_mode() -> str:
    """The resolved mode: 'widget', 'text' or 'off' (reads `KGRAG_PROGRESS`, default 'auto')."""
    raw = os.environ.get(PROGRESS_ENV, "").strip().lower() or DEFAULT_MODE
    if raw not in MODES:
        raise ConfigError(f"{PROGRESS_ENV}={raw!r} is not one of {', '.join(MODES)}.")
    if raw == "auto":
        return "widget" if _in_jupyter_kernel() and _have_ipywidgets() else "text"
    if raw == "widget" and not _have_ipywidgets():
        raise MissingDependencyError(f"{PROGRESS_ENV}=widget needs ipywidgets: pip install -e '.[dev]'.")
    return raw


def progress_bar(iterable: Iterable | None = None, *, total: int | None = None, desc: str | None = None,
                 unit: str = "it", initial: int = 0, enabled: bool = True, file=None, **kwargs: Any):
    """A tqdm bar in the current mode (see the module docstring); any other tqdm keyword passes through."""
    mode = progress_mode() if enabled else "off"
    common = dict(total=total, desc=desc, unit=unit, initial=initial, **kwargs)
    if mode == "off":
        from tqdm.std import tqdm

        return tqdm(iterable, disable=True, **common)
    if mode == "widget":
        from tqdm.notebook import tqdm as tqdm_widget

        return tqdm_widget(iterable, **common)
    from tqdm.std import tqdm

    stream = sys.stderr if file is None else file
    if _is_terminal(stream):
        return tqdm(iterable, file=stream, **common)
    common.setdefault("mininterval", LINE_INTERVAL_S)
    common.setdefault("maxinterval", max(LINE_INTERVAL_S, common["mininterval"]))
    common.setdefault("ascii", True)
    common.setdefault("ncols", 100)
    return tqdm(iterable, file=LineWriter(stream), dynamic_ncols=False, **common)


_child_lock = threading.Lock()
_child_depth = 0
_child_saved: str | None = None


@contextmanager
def text_progress_in_children() -> Iterator[None]:
    """Kernels started inside this block (papermill's) inherit `KGRAG_PROGRESS=text` unless the user set it.

    Nested and concurrent uses (the runner's worker threads) share one setting; the caller's own value
    comes back when the last one leaves, so a notebook that runs a grid keeps its widget bars.
    """
    global _child_depth, _child_saved
    with _child_lock:
        if _child_depth == 0:
            _child_saved = os.environ.get(PROGRESS_ENV)
            if _child_saved is None:
                os.environ[PROGRESS_ENV] = "text"
        _child_depth += 1
    try:
        yield
    finally:
        with _child_lock:
            _child_depth -= 1
            if _child_depth == 0 and _child_saved is None:
                os.environ.pop(PROGRESS_ENV, None)


class LineWriter:
    """A file for tqdm that turns each redraw ('\\r' + bar + padding) into one plain line; repeats are dropped."""

    def __init__(self, stream):
        self.stream = stream
        self._last = None

    def write(self, text: str) -> int:
        for part in text.replace("\r", "\n").split("\n"):
            line = part.rstrip()
            if line and line != self._last:
                self.stream.write(line + "\n")
                self._last = line
        return len(text)

    def flush(self) -> None:
        flush = getattr(self.stream, "flush", None)
        if flush is not None:
            flush()


def _is_terminal(stream) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False


def _in_jupyter_kernel() -> bool:
    """True inside an IPython kernel (JupyterLab, a papermill kernel), False in a terminal or plain python."""
    shell = sys.modules.get("IPython")
    if shell is None:
        return False
    try:
        ip = shell.get_ipython()
    except AttributeError:  # pragma: no cover - a very old IPython
        return False
    return ip is not None and "IPKernelApp" in getattr(ip, "config", {})


def _have_ipywidgets() -> bool:
    import importlib.util

    return importlib.util.find_spec("ipywidgets") is not None


def human_seconds(seconds: float) -> str:
    """A duration as a reader estimates it: seconds under 90, minutes under 90, else hours."""
    if seconds < 90:
        return f"{max(1, round(seconds))} s"
    if seconds < 5400:
        return f"{round(seconds / 60)} min"
    return f"{seconds / 3600:.1f} h"
