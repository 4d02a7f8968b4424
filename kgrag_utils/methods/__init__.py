"""The KG-RAG methods reproduced by the notebooks, one subpackage each (e.g. `methods.simgrag`).

Each method builds on the shared layers (kg, datasets, embeddings, vector_index, llm, metrics,
records) and keeps its own prompts, retrieval and per-example records. All four follow one
protocol (`base`): a `<M>Config` on `MethodConfig`, `<M>(config, ...).run(items, recorder=None,
progress=True) -> list[record]`, `summarize(records)`, `scores(summary)`, `published.py` and
`figures.py`; `REGISTRY` (`registry`) lists them for the report, the runner and the CLI.
"""

from .base import Method, MethodConfig, figure_name
from .registry import REGISTRY, Headline, MethodSpec, get_method, method_for_notebook, methods

__all__ = ["Method", "MethodConfig", "figure_name", "REGISTRY", "Headline", "MethodSpec", "get_method", "method_for_notebook", "methods"]
