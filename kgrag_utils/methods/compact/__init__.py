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
"""

from .checks import (ChainSelection, ConsistencyReport, context_derivation, functional_relations, kg_consistency,
                     kinship_consistency, select_derivable)
from .config import CONTEXTS, KNOWLEDGE_SOURCES, CompactConfig
from .context import CompactContext, RankedFacts, compact_context, path_support, topk_context, topk_contexts_per_question
from .gate import GATES, GateChoice, choose_gate, gate_passes, gate_table
from .graphs import QuestionKGs, functional_relation_names
from .knn import KNNVote
from .knowledge import Chain, ChainProposal, RelationKnowledge, as_chain, format_chain
from .lexicon import LiftLexicon, align_counts, mask_topic, question_tokens
from .pipeline import HUMAN_WRITTEN, Compact, auto_knowledge, gold_chains, tune_lift_threshold
from .published import PAPER
from .splits import split_validation, training_split
from .prompts import kgqa_prompt, kinship_prompt, parse_answers, parse_kinship_answer
from .rules import KinshipDerivation, KinshipRuleKnowledge, check_rules, compose_cky, story_graph
from .tokens import TokenCounter, load_token_counter

from . import figures, published
from .record import CompactRecord
from .statistics import derivation_statistics
from .summary import scores, summarize

__all__ = [
    "summarize", "scores", "derivation_statistics", "CompactRecord", "figures", "published",
    "CompactConfig", "Compact", "KNOWLEDGE_SOURCES", "CONTEXTS", "PAPER",
    "RelationKnowledge", "ChainProposal", "Chain", "as_chain", "format_chain",
    "LiftLexicon", "align_counts", "mask_topic", "question_tokens", "KNNVote",
    "KinshipRuleKnowledge", "KinshipDerivation", "check_rules", "compose_cky", "story_graph",
    "CompactContext", "RankedFacts", "compact_context", "path_support", "topk_context", "topk_contexts_per_question",
    "QuestionKGs", "functional_relation_names", "HUMAN_WRITTEN", "auto_knowledge", "gold_chains",
    "ChainSelection", "ConsistencyReport", "select_derivable", "context_derivation", "functional_relations",
    "kg_consistency", "kinship_consistency",
    "GATES", "GateChoice", "choose_gate", "gate_passes", "gate_table",
    "kgqa_prompt", "kinship_prompt", "parse_answers", "parse_kinship_answer",
    "split_validation", "training_split", "tune_lift_threshold",
    "TokenCounter", "load_token_counter",
]
