"""Gold ("oracle") patterns built from a question's gold relation chain and topic entity.

A chain [(r1, f1), (r2, f2), ...] from topic T becomes the path T - U1 - U2 - ... with one UNKNOWN
node per hop; a forward step writes (prev, r, next), a backward step (next, r, prev), so the
pattern's edges point the way the KG's facts do. The answer node is the last unknown. Node types
come from MetaQA's question type (`actor_to_movie_to_director` -> movie, director) and default to
"entity" (PathQuestion has no types). Feeding these patterns to the retriever isolates retrieval
from the LLM, as in the paper's stage-wise error analysis.
"""

from __future__ import annotations

from typing import Sequence

from ...errors import ConfigError
from .pattern import Pattern, PatternEdge, PatternNode

__all__ = ["oracle_pattern", "chain_pattern", "qtype_node_types"]


def qtype_node_types(qtype: str | None, hops: int) -> list[str]:
    """Types of the unknown nodes from a MetaQA question type, else 'entity' for each hop."""
    if qtype and "_to_" in qtype:
        parts = qtype.split("_to_")
        if len(parts) == hops + 1:
            return parts[1:]
    return ["entity"] * hops


def chain_pattern(topic: str, chain: Sequence[tuple[str, bool]], types: Sequence[str] | None = None) -> Pattern:
    """The path pattern of a relation chain from a topic entity (the answer is the last unknown)."""
    if not chain:
        raise ConfigError("an oracle pattern needs a non-empty relation chain.")
    types = list(types) if types is not None else ["entity"] * len(chain)
    if len(types) != len(chain):
        raise ConfigError(f"need one node type per hop ({len(chain)}), got {len(types)}.")
    nodes = [PatternNode(topic, True)]
    edges = []
    for i, ((relation, forward), kind) in enumerate(zip(chain, types), 1):
        nodes.append(PatternNode(f"UNKNOWN {kind} {i}", False, kind))
        prev, nxt = i - 1, i
        edges.append(PatternEdge(prev, str(relation), nxt) if forward else PatternEdge(nxt, str(relation), prev))
    return Pattern(nodes, edges, answer=len(nodes) - 1, source="oracle")


def oracle_pattern(question) -> Pattern | None:
    """The gold pattern of a KGQuestion (None when it has no chain or no topic entity)."""
    chain = getattr(question, "chain", None)
    topics = getattr(question, "topic_entities", None) or []
    if not chain or not topics:
        return None
    return chain_pattern(topics[0], chain, qtype_node_types(getattr(question, "qtype", None), len(chain)))
