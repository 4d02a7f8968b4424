"""The KG-RAG methods reproduced by the notebooks, one subpackage each (e.g. `methods.simgrag`).

Each method builds on the shared layers (kg, datasets, embeddings, vector_index, llm, metrics,
records) and keeps its own prompts, retrieval and per-example records. All four follow one
protocol (`base.Method`): a `<M>Config` on `MethodConfig`, `<M>.prepare(config, dataset)`,
`run(items, recorder=None, progress=True) -> list[record]`, and one road from records to scores
(`summary`: `summarize(records)` with the method's hooks in its own `summary.py`, the score rows
stored with the summary). `REGISTRY` (`registry`, built from the classes on first use) lists them
for the report, the runner and the CLI.
"""

from .base import Method, MethodConfig, figure_name
from .registry import MethodSpec, entries, get_method, method_for_notebook, methods
from .scoring import Headline

__all__ = ["Method", "MethodConfig", "figure_name", "REGISTRY", "Headline", "MethodSpec", "get_method",
           "method_for_notebook", "methods"]


def __getattr__(name: str):
    if name == "REGISTRY":  # built on first use: importing this package imports no method
        return entries()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
