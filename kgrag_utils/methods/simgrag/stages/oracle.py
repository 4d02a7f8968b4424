"""Gold ("oracle") patterns built from a question's gold relation chain and topic entity.

A chain [(r1, f1), (r2, f2), ...] from topic T becomes the path T - U1 - U2 - ... with one UNKNOWN
node per hop; a forward step writes (prev, r, next), a backward step (next, r, prev), so the
pattern's edges point the way the KG's facts do. The answer node is the last unknown. Node types
come from MetaQA's question type (`actor_to_movie_to_director` -> movie, director) and default to
"entity" (PathQuestion has no types). A conjunctive question (several chains meeting at the
answer, `KGQuestion.branches`) becomes a tree: one such path per branch, all ending at one shared
answer node. Feeding these patterns to the retriever isolates retrieval
from the LLM, as in the paper's stage-wise error analysis.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from ....errors import ConfigError
from ....metrics import normalize_answer
from .pattern import Pattern, PatternEdge, PatternNode

__all__ = ["oracle_pattern", "chain_pattern", "branches_pattern", "gold_answer_ids", "simple_gold_answer_ids",
           "qtype_node_types", "simple_path_answers", "MISS_CLASSES", "miss_class", "classify_miss"]


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


def branches_pattern(branches: Sequence[tuple[str, Sequence[tuple[str, bool]]]]) -> Pattern:
    """The tree pattern of several chains meeting at the answer: one path per (topic, chain), all
    ending at one shared UNKNOWN answer node (WC2014's "a player at position P in club C" is
    P -plays_position_inverse-> ?x <-plays_in_club_inverse- C). One branch gives `chain_pattern`."""
    branches = [(t, list(c)) for t, c in branches]
    if not branches or any(not c for _, c in branches):
        raise ConfigError("an oracle pattern needs at least one branch, each with a non-empty relation chain.")
    if len(branches) == 1:
        return chain_pattern(branches[0][0], branches[0][1])
    nodes = [PatternNode("UNKNOWN entity 0", False, "entity")]  # the answer
    edges = []
    for topic, chain in branches:
        prev = len(nodes)
        nodes.append(PatternNode(topic, True))
        for i, (relation, forward) in enumerate(chain):
            if i == len(chain) - 1:
                nxt = 0
            else:
                nxt = len(nodes)
                nodes.append(PatternNode(f"UNKNOWN entity {nxt}", False, "entity"))
            edges.append(PatternEdge(prev, str(relation), nxt) if forward else PatternEdge(nxt, str(relation), prev))
            prev = nxt
    return Pattern(nodes, edges, answer=0, source="oracle")


def oracle_pattern(question) -> Pattern | None:
    """The gold pattern of a KGQuestion: a path from its gold chain, or a tree from its branches
    (conjunctive questions); None when it has no gold structure or no topic entity."""
    if getattr(question, "conjunctive", False):
        return branches_pattern(question.gold_branches())
    chain = getattr(question, "chain", None)
    topics = getattr(question, "topic_entities", None) or []
    if not chain or not topics:
        return None
    return chain_pattern(topics[0], chain, qtype_node_types(getattr(question, "qtype", None), len(chain)))


def gold_answer_ids(kg, question) -> set | None:
    """Entity ids the gold structure reaches in `kg`: the chain's walk from the topic, intersected over
    the branches of a conjunctive question (None when a topic is not in the KG or there is no chain)."""
    reached = None
    for topic, chain in question.gold_branches():
        if not kg.has_entity(topic):
            return None
        ids = set(np.asarray(kg.follow_chain([kg.entity_id(topic)], chain).reached).tolist())
        reached = ids if reached is None else reached & ids
    return reached


def simple_gold_answer_ids(kg, question, max_paths: int = 200_000) -> set | None:
    """`simple_path_answers` of the gold structure, intersected over branches (None: unknown, too many
    paths, a topic missing from the KG or no chain). For several branches this is each branch's simple
    paths, not a check that the branches share no entity besides the answer."""
    out = None
    for topic, chain in question.gold_branches():
        if not kg.has_entity(topic):
            return None
        ids = simple_path_answers(kg, topic, chain, max_paths)
        if ids is None:
            return None
        out = ids if out is None else out & ids
    return out


def simple_path_answers(kg, topic: str, chain: Sequence[tuple[str, bool]], max_paths: int = 200_000) -> set | None:
    """End entity ids of the chain's SIMPLE paths from the topic (no entity twice), or None if too many.

    The data layer's `answerable` follows the chain as a walk, which may pass through the topic again
    (MetaQA 3-hop "films whose writers also wrote [X]" reaching X's own director via X). An injective
    pattern match cannot use such walks; this set says what it can reach.
    """
    paths = [(kg.entity_id(topic),)]
    for rel, forward in chain:
        if not kg.has_relation(rel):
            return set()
        r = kg.relation_id(rel)
        grown = []
        for path in paths:
            nbrs = kg.neighbors(path[-1], relation=r, direction="out" if forward else "in")[0]
            grown.extend(path + (x,) for x in set(nbrs.tolist()) if x not in path)
        paths = grown
        if len(paths) > max_paths:
            return None
    return {p[-1] for p in paths}


#: Why an answerable question's top-1 answer (oracle pattern) is not a gold answer.
MISS_CLASSES = {
    "top1_is_kb_answer_not_in_gold_list": "the top-1 node IS reached by the gold chain in this KB but is not in the "
                                          "question's gold list: a GSD tie (usually 0) between several true KB answers; "
                                          "MetaQA merges films of one title into one entity (e.g. [The Patriot] 1998 "
                                          "and 2000) while the gold list holds one film's answers",
    "needs_non_simple_path": "some gold answer is reached only by walks that revisit an entity (e.g. 3-hop "
                             "'films whose writers also wrote [X]' answered through X itself, or a self-loop): "
                             "an injective match cannot use them (whether it found another match or none), and "
                             "with walks allowed a simple match of equal GSD ranks first",
    "no_match": "no subgraph at all, although the gold answers are reached by simple paths",
    "other": "anything else (a wrong entity candidate, a relation direction, ...)",
}


def miss_class(on_chain: bool, needs_walk: bool, best) -> str:
    """The MISS_CLASSES label of an answerable question whose top-1 answer node is not a gold answer.

    `on_chain`: the top-1 node is reached by the gold chain in this KB; `needs_walk`: some gold answer
    is reached only by walks that revisit an entity; `best`: the top-1 subgraph (None: no match).
    A question that needs a walk is labelled so even when nothing matched (an injective search finds
    no match at all for a self-loop), so `no_match` is left for questions a simple path answers.
    """
    if best is not None and on_chain:
        return "top1_is_kb_answer_not_in_gold_list"
    if needs_walk:
        return "needs_non_simple_path"
    if best is None:
        return "no_match"
    return "other"


def classify_miss(kg, question, best, answer_id: int | None) -> str:
    """`miss_class` of an answerable question whose top-1 answer node (`answer_id` of subgraph `best`; None: no
    match) is not a gold answer, with `on_chain` and `needs_walk` computed from the gold structure in `kg`."""
    reached = gold_answer_ids(kg, question) or set()
    simple = simple_gold_answer_ids(kg, question) if reached else set()
    gold = {normalize_answer(a) for a in question.answers}
    simple_names = {normalize_answer(str(kg.entity_names[x])) for x in simple or ()}
    needs_walk = simple is not None and not gold <= simple_names
    return miss_class(answer_id is not None and answer_id in reached, needs_walk, best)
