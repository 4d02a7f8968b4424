"""SimGRAG (ACL 2025): query -> pattern graph -> top-k subgraphs by graph semantic distance -> answer.

    from kgrag_utils.methods.simgrag import SimGRAG, SimGRAGConfig, summarize
    config = SimGRAGConfig(pattern_source="llm")
    method = SimGRAG.prepare(config, config.load_dataset())   # embeds and indexes the KG
    records = method.run(items, recorder=recorder)
    summary = summarize(records)

FactKG (fact verification): `prepare` passes the KG's entity types to the retriever (the type-candidate
rule), and a dataset whose task is "verify" (`dataset.traits.task`: FactKG) verifies claims.

The folder has the rooms of every method folder (docs/ARCHITECTURE.md#methods): `config`, `method` (the class),
`record`, `summary`, `figures`, `published`, `prompts`, `ask`, `view` (the run explorer's), and `stages/` (the
algorithm's own modules, listed in `stages/__init__.py`).

The package exports what a notebook uses (the method, its config and record types, `summarize`, `scores`,
`figures`, `published`); everything else is imported from its module.
"""

from . import figures, published
from .config import SimGRAGConfig
from .method import SimGRAG
from .record import SimGRAGRecord
from .summary import scores, summarize

__all__ = ["SimGRAG", "SimGRAGConfig", "SimGRAGRecord", "summarize", "scores", "figures", "published"]
