"""The method registry: one entry per notebook that writes run records, iterated by report, runner and CLI.

    from kgrag_utils.methods import REGISTRY, get_method, method_for_notebook
    spec = get_method("simgrag")             # did-you-mean on a typo
    spec.notebook, spec.config_class        # "01_simgrag.ipynb", SimGRAGConfig
    cfg = spec.config_class.from_params(params)
    spec.headline                           # the metrics the grid summary shows (strict, lenient)

A method entry names the package (`kgrag_utils.methods.<name>`) and, inside it, the five names every
method exposes: the config class, the method class, the record type, `summarize(records)` and
`scores(summary, run=None)` (long-form rows, see `scoring`); the package also exposes
`stage_errors(summary, run=None)` and holds `published.py` (the paper's numbers: `rows()`,
`OUR_METRICS`) and `figures.py`. Entries are
resolved lazily, so reading the registry imports no method. A fifth method is one folder, one
notebook and one line in `REGISTRY`.

`kind` is "method" for the four methods, "tour" for the quickstart (scored, no config class) and
"report" for the report notebook (reads other runs; never scored).
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from ..errors import ConfigError, did_you_mean

__all__ = ["Headline", "MethodSpec", "PROTOCOL", "REGISTRY", "get_method", "method_for_notebook", "methods"]


@dataclass(frozen=True)
class Headline:
    """What the grid summary shows for a run: the first (strict, lenient) metric pair present in its
    scores, read from the row of `variant` (or, when the run has no such row, its first row)."""

    pairs: tuple[tuple[str, str | None], ...]
    variant: str | None = None


@dataclass(frozen=True)
class MethodSpec:
    name: str                      # the method name run records carry (RunRecorder's first argument)
    notebook: str                  # file name under notebooks/
    kind: str = "method"           # "method" | "tour" | "report"
    package: str = ""              # import path of the package that holds the names below
    config: str | None = None      # config class name (a MethodConfig)
    method: str | None = None      # method class name: `<M>(config, ...).run(items, recorder, progress)`
    record: str | None = None      # record type name (a TypedDict documenting one example's record)
    headline: Headline = field(default_factory=lambda: Headline((("hits@1", "containment"),)))
    color: str = "#333333"         # the method's colour in cross-method figures
    label: str = ""                # a human name for tables

    # ------------------------------------------------------------------ lazy resolution
    def module(self):
        if not self.package:
            raise ConfigError(f"registry entry {self.name!r} has no package.")
        return importlib.import_module(self.package)

    def _attr(self, name: str | None) -> Any:
        if name is None:
            return None
        return getattr(self.module(), name)

    @property
    def config_class(self):
        """The method's config class (None for the tour and the report)."""
        if self.config is None:
            return None
        module, _, cls = self.config.rpartition(":")
        return getattr(importlib.import_module(module), cls) if module else self._attr(cls)

    @property
    def method_class(self):
        return self._attr(self.method)

    @property
    def record_type(self):
        return self._attr(self.record)

    @property
    def summarize(self) -> Callable:
        return self._attr("summarize")

    @property
    def scores(self) -> Callable:
        return self._attr("scores")

    @property
    def stage_errors(self) -> Callable:
        return self._attr("stage_errors")

    @property
    def published(self):
        return importlib.import_module(f"{self.package}.published")

    @property
    def figures(self):
        return importlib.import_module(f"{self.package}.figures")

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


#: the names every registered method's package exposes (the config, method and record classes by their own names)
PROTOCOL = ("config", "method", "record", "summarize", "scores")

#: name -> entry, in notebook order
REGISTRY: dict[str, MethodSpec] = {s.name: s for s in (
    MethodSpec("quickstart", "00_quickstart.ipynb", kind="tour", package="kgrag_utils.methods.tour",
               color="#666666", label="quickstart (oracle-chain reader)"),
    MethodSpec("simgrag", "01_simgrag.ipynb", package="kgrag_utils.methods.simgrag",
               config="kgrag_utils.methods.simgrag.config:SimGRAGConfig", method="SimGRAG", record="SimGRAGRecord",
               headline=Headline((("hits@1", "containment"), ("accuracy", "containment"))),
               color="#1b9e77", label="SimGRAG"),
    MethodSpec("compact", "02_compact_relations.ipynb", package="kgrag_utils.methods.compact",
               config="kgrag_utils.methods.compact.config:CompactConfig", method="Compact", record="CompactRecord",
               headline=Headline((("hits@1", "containment"),), variant="LLM reads compact facts"),
               color="#d95f02", label="compact relation selection"),
    MethodSpec("vector_rerank", "03_vector_rerank.ipynb", package="kgrag_utils.methods.vector_rerank",
               config="kgrag_utils.methods.vector_rerank.config:VectorRerankConfig", method="VectorRerank",
               record="VectorRerankRecord",
               headline=Headline((("hits@1", "containment"), ("recall@5", "recall@2")), variant="rerank"),
               color="#7570b3", label="vector retrieval + LLM rerank"),
    MethodSpec("kgp", "04_kgp.ipynb", package="kgrag_utils.methods.kgp",
               config="kgrag_utils.methods.kgp.config:KGPConfig", method="KGP", record="KGPRecord",
               headline=Headline((("em", "f1"), ("recall@5", "recall@30"))),
               color="#e7298a", label="KGP"),
    MethodSpec("report", "05_report.ipynb", kind="report", label="the reproduction report"),
)}


def methods(kind: str | None = "method") -> list[MethodSpec]:
    """Registry entries of one kind ("method", "tour", "report"; None = all), in notebook order."""
    return [s for s in REGISTRY.values() if kind is None or s.kind == kind]


def get_method(name: str) -> MethodSpec:
    """The entry of a method name; a typo is refused naming the closest registered name."""
    try:
        return REGISTRY[name]
    except KeyError:
        tip = did_you_mean(name, REGISTRY)
        hint = f" ({tip})" if tip else ""
        raise ConfigError(f"unknown method {name!r}{hint}; registered: {', '.join(REGISTRY)}.") from None


def method_for_notebook(notebook: str | Path) -> MethodSpec | None:
    """The entry whose notebook this is (by file name or stem), or None for a notebook not registered."""
    stem = Path(str(notebook)).stem
    for spec in REGISTRY.values():
        if spec.notebook_stem == stem:
            return spec
    return None
