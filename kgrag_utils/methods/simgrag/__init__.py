"""SimGRAG (ACL 2025): query -> pattern graph -> top-k subgraphs by graph semantic distance -> answer.

    from kgrag_utils.methods.simgrag import SimGRAG, SimGRAGConfig, summarize
    config = SimGRAGConfig(pattern_source="llm")
    method = SimGRAG.prepare(config, config.load_dataset())   # embeds and indexes the KG
    records = method.run(items, recorder=recorder)
    summary = summarize(records)

FactKG (fact verification): `prepare` passes the KG's entity types to the retriever (the type-candidate
rule), and a dataset whose task is "verify" (`dataset.traits.task`: FactKG) verifies claims.

The package exports what a notebook uses (the method, its config and record types, `summarize`, `scores`,
`figures`, `published`); everything else is imported from its module: the rooms every method folder has
(docs/ARCHITECTURE.md#methods), or `stages/` (the algorithm's own modules).
"""

from . import figures, published
from .config import SimGRAGConfig
from .method import SimGRAG
from .record import SimGRAGRecord
from .summary import scores, summarize

__all__ = ["SimGRAG", "SimGRAGConfig", "SimGRAGRecord", "summarize", "scores", "figures", "published"]
