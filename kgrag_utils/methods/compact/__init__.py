"""Compact relation selection: relation knowledge picks about a dozen facts; two checks and a gate.

Relation knowledge proposes a relation chain (kinship rules, a lift lexicon for templated
questions, or a kNN vote for free wording); the compact context is the facts on complete chain
paths from the topic entity; a derivability check and a consistency check decide, through a gate
chosen on validation, when the derived answer replaces the LLM's. The baseline context is the
top-100 facts of the topic's neighbourhood by embedding similarity, read by the same LLM.

    from kgrag_utils.datasets import load_dataset
    from kgrag_utils.methods.compact import CompactConfig, Compact
    ds = load_dataset("sample-movies-2hop", split="test")
    method = Compact.prepare(CompactConfig(context="compact", reader=False), ds)   # derivation only, no LLM
    records = method.run(ds.items)

WebQSP and CWQ as released by RoG (`load_dataset("webqsp")`, `"cwq"`) have one subgraph per question
and no global KG: `QuestionKGs` serves each question its own, and the kNN vote learns from the
training split's shortest topic-to-answer chains.

The package exports what a notebook uses (the method, its config and record types, `summarize`, `scores`,
`figures`, `published`); everything else is imported from its module: the rooms every method folder has
(docs/ARCHITECTURE.md#methods), or `stages/` (the algorithm's own modules).
"""

from . import figures, published
from .config import CompactConfig
from .stages.gate import gate_table
from .stages.knowledge import format_chain
from .method import Compact
from .record import CompactRecord
from .stages.rules import KinshipRuleKnowledge, compose_cky
from .summary import scores, summarize

__all__ = ["Compact", "CompactConfig", "CompactRecord", "summarize", "scores", "figures", "published",
           "KinshipRuleKnowledge", "compose_cky", "format_chain", "gate_table"]
