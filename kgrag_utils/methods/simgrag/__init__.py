"""SimGRAG (ACL 2025): query -> pattern graph -> top-k subgraphs by graph semantic distance -> answer.

    from kgrag_utils.methods.simgrag import GSDRetriever, SimGRAG, SimGRAGConfig
    retriever = GSDRetriever.from_embedder(dataset.kg, "minilm")
    method = SimGRAG(SimGRAGConfig(pattern_source="llm"), dataset.kg, retriever, llm, dataset=dataset.name)
    records = method.run(dataset.items, recorder=recorder)

FactKG (fact verification): `GSDRetriever.from_embedder(kg, "minilm", entity_types=dataset.info["entity_types"])`
enables the type-candidate rule, and `SimGRAG(..., dataset="factkg")` verifies claims (task "verify").

Modules: `pattern` (pattern graphs, parser, validation, prompt), `oracle` (gold patterns from
chains), `gsd_search` (filtering, ordering, enumeration with an admissible bound), `type_candidates`
(entity-type candidates for patterns without a named entity), `generate` (evidence lines, answer and
verification prompts and parsers), `pipeline` (per-example records), `summary` (the summary hooks).
"""

from .generate import build_answer_prompt, build_verify_prompt, evidence_lines, parse_answer, parse_verdict
from .gsd_search import (Candidates, GSDConfig, GSDRetriever, Incidence, SearchResult, Subgraph, embedding_text,
                         search_topk)
from .oracle import chain_pattern, oracle_pattern
from .pattern import (Pattern, PatternCheck, PatternEdge, PatternNode, build_pattern_prompt, parse_pattern_output,
                      pattern_family, validate_pattern)
from .config import PATTERN_SOURCES, TASKS, SimGRAGConfig, resolve_task
from .pipeline import SimGRAG, replay_gold_llm
from .type_candidates import TypeIndex, type_text

from . import figures, published
from .record import STAGES, SimGRAGRecord
from .summary import scores, summarize

__all__ = [
    "summarize", "scores", "SimGRAGRecord", "figures", "published",
    "Pattern", "PatternNode", "PatternEdge", "PatternCheck", "parse_pattern_output", "validate_pattern",
    "build_pattern_prompt", "pattern_family", "oracle_pattern", "chain_pattern", "GSDConfig", "GSDRetriever",
    "Incidence", "Candidates", "Subgraph", "SearchResult", "search_topk", "embedding_text", "evidence_lines",
    "build_answer_prompt", "parse_answer", "SimGRAG", "SimGRAGConfig", "replay_gold_llm", "PATTERN_SOURCES",
    "STAGES", "TASKS", "resolve_task", "build_verify_prompt", "parse_verdict", "TypeIndex", "type_text",
]
