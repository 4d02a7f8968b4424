"""The method registry, built from the method classes: one entry per notebook, iterated by the report, the
runner and the CLI.

    from kgrag_utils.methods import REGISTRY, get_method, method_for_notebook
    spec = get_method("simgrag")             # did-you-mean on a typo
    spec.notebook, spec.config_class        # "01_simgrag.ipynb", SimGRAGConfig
    cfg = spec.config_class.from_params(params)
    spec.headline                           # the metrics the grid summary shows (strict, lenient)

A method registers itself: every `base.Method` subclass that sets its own `notebook` (and `name`) is listed
(`base.REGISTERED`), and the registry imports each module and package of `kgrag_utils.methods` once to run those
class statements (`_discover`). Each entry is read from its class's attributes (`name`, `notebook`, `kind`,
`config_class`, `record_type`, `headline`, `color`, `label`); the method's package beside the class holds
`summary.py` (its summary hooks), `published.py` (the paper's numbers: `rows()`, `OUR_METRICS`),
`figures.py` and `view.py` (the run explorer's view of its records). A fifth method is one folder with its class, and one notebook: no line here.

`kind` is "method" for the four methods and "tour" for the quickstart (scored, no config class). The report and
the run explorer are notebooks, not methods: `NotebookEntry` (kind "report": they read other runs; never scored).
The registry is built on first use, so importing this module imports no method.
"""

from __future__ import annotations

import importlib
import importlib.util
import pkgutil
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from ..errors import ConfigError, did_you_mean
from .base import REGISTERED, Method
from .scoring import Headline

__all__ = ["Headline", "MethodSpec", "NotebookEntry", "NOTEBOOKS", "REGISTRY", "entries", "get_method",
           "method_for_notebook", "methods"]


class _Listed:
    """What every entry says about its notebook (`self.notebook`: its file name under notebooks/)."""

    @property
    def notebook_stem(self) -> str:
        return Path(self.notebook).stem

    def parameter_names(self) -> list[str]:
        """The names of the notebook's parameters cell (read from the notebook file)."""
        from ..notebook_params import notebook_parameters

        return list(notebook_parameters(self.notebook))

    def run_parameters(self, namespace: dict) -> dict:
        """What a run records as its parameters: every notebook parameter but run_name, from `namespace`
        (the notebook's `globals()`), so that the runner and the run record hash the same values."""
        return {k: namespace[k] for k in self.parameter_names() if k != "run_name" and k in namespace}

    def run_name(self, namespace: dict) -> str:
        """The run's name as its `RunRecorder` will have it: the notebook's `run_name` (the batch runner sets
        it), else the method's name and the hash of its run parameters (for figure names before the recorder)."""
        from ..records import check_run_name, default_run_name

        return check_run_name(namespace.get("run_name") or default_run_name(self.name, self.run_parameters(namespace)))


@dataclass(frozen=True)
class MethodSpec(_Listed):
    """One registry entry: a method class's face, and the modules of its package."""

    method_class: type[Method]

    @classmethod
    def of(cls, method_class: type[Method]) -> "MethodSpec":
        for attr in ("name", "notebook"):
            if not getattr(method_class, attr, ""):
                raise ConfigError(f"{method_class.__name__} has no {attr!r}: set it as a class attribute (see methods/base.py).")
        return cls(method_class)

    def __getattr__(self, attr: str) -> Any:  # name, notebook, kind, config_class, record_type, headline, color, label
        if attr in _FACE:
            return getattr(self.method_class, attr)
        raise AttributeError(attr)

    @property
    def package(self) -> str:
        """The import path of the package that holds the class (summary.py, published.py, figures.py)."""
        return self.method_class.__module__.rpartition(".")[0]

    def module(self):
        return importlib.import_module(self.package)

    def summarize(self, records) -> dict:
        return self.method_class.summarize(records)

    @property
    def published(self):
        return importlib.import_module(f"{self.package}.published")

    @property
    def figures(self):
        return importlib.import_module(f"{self.package}.figures")

    @property
    def view(self):
        """The run explorer's view of the method's records: the module `view_module` beside its class (`view.py`
        in the method's folder), or None where there is none (the explorer then shows the generic view)."""
        module = f"{self.package}.{self.method_class.view_module}"
        try:
            found = bool(self.package) and importlib.util.find_spec(module) is not None
        except ModuleNotFoundError:  # the class's module is no package's (a test's module)
            found = False
        return importlib.import_module(module) if found else None


@dataclass(frozen=True)
class NotebookEntry(_Listed):
    """A notebook that reads other runs' records (the report, the run explorer): listed, never scored, no config."""

    name: str
    notebook: str
    label: str
    kind: str = "report"
    headline: Headline = Headline(())
    color: str = "#333333"
    config_class: None = None
    record_type: None = None
    view: None = None


#: the notebooks that are no method (they read other runs)
NOTEBOOKS = (NotebookEntry("report", "05_report.ipynb", "the reproduction report"),
             NotebookEntry("explore", "06_explore.ipynb", "the run explorer"))


def _discover() -> None:
    """Import each module and package of kgrag_utils.methods, so that every method class has registered itself."""
    package = importlib.import_module(__name__.rpartition(".")[0])
    for info in pkgutil.iter_modules(package.__path__):
        importlib.import_module(f"{package.__name__}.{info.name}")


_FACE = ("name", "notebook", "kind", "config_class", "record_type", "headline", "color", "label")


_discovered: list[bool] = []


def entries() -> dict[str, "MethodSpec | NotebookEntry"]:
    """name -> entry, in notebook order (the registered method classes and `NOTEBOOKS`; built on first use)."""
    if not _discovered:
        _discover()
        _discovered.append(True)
    return _entries(tuple(REGISTERED.values()))


@lru_cache(maxsize=4)
def _entries(classes: tuple[type[Method], ...]) -> dict[str, "MethodSpec | NotebookEntry"]:
    listed = [*(MethodSpec.of(c) for c in classes), *NOTEBOOKS]
    names = [s.name for s in listed]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise ConfigError(f"method name(s) {twice} are registered twice: give each method class its own `name`.")
    return {s.name: s for s in sorted(listed, key=lambda s: s.notebook)}


def __getattr__(name: str):
    if name == "REGISTRY":  # `from kgrag_utils.methods.registry import REGISTRY` builds it
        return entries()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def methods(kind: str | None = "method") -> list["MethodSpec | NotebookEntry"]:
    """Registry entries of one kind ("method", "tour", "report"; None = all), in notebook order."""
    return [s for s in entries().values() if kind is None or s.kind == kind]


def get_method(name: str) -> "MethodSpec | NotebookEntry":
    """The entry of a method name; a typo is refused naming the closest registered name."""
    reg = entries()
    try:
        return reg[name]
    except KeyError:
        tip = did_you_mean(name, reg)
        hint = f" ({tip})" if tip else ""
        raise ConfigError(f"unknown method {name!r}{hint}; registered: {', '.join(reg)}.") from None


def method_for_notebook(notebook: str | Path) -> "MethodSpec | NotebookEntry | None":
    """The entry whose notebook this is (by file name or stem), or None for a notebook not registered."""
    stem = Path(str(notebook)).stem
    for spec in entries().values():
        if spec.notebook_stem == stem:
            return spec
    return None
