"""The two contexts the LLM reads: the compact fact set and the top-k relevance baseline.

Compact (the method): follow the predicted chain from the topic entity, keeping only facts on
complete paths (paths that reach an endpoint, i.e. a derived answer). What a path may do with the
topic entity is a property of the dataset's questions, so it is learned from the training split
(`choose_topic_policy`): "walk" (anything goes; PathQuestion's children > parents may return to
the topic), "exclude_end" (the topic is never an answer; MetaQA 1/2-hop) or "avoid" (no path
returns to the topic; MetaQA 3-hop's "films that share directors with [X]" are the *other* films). Answers are
ranked by support, the number of complete paths that reach them. When a chain fans out past
`max_facts`, the cap rule keeps whole paths, never half of one:

    answers in support order; for each, the path to it that adds the fewest new facts (it prefers
    entities the kept paths already pass through, then better-supported entities, then lower ids);
    an answer whose path would exceed the cap is skipped; the first path is always kept.

Top-k (the baseline, SubgraphRAG-style): the k facts most similar to the question (cosine of
sentence embeddings) among the facts within `hops` hops of the topic entity (the pipeline uses
max(question hops, 2)); the pool is capped at `pool` facts, nearer hops first (KG.khop_edges' rule).
Where each question has its own subgraph (WebQSP/CWQ from RoG), the pool is that whole subgraph as
reached from the topic (`topk_contexts_per_question`), since RoG's subgraphs are what SubgraphRAG ranks.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass, field
from typing import Sequence

import numpy as np

from ....errors import ConfigError

__all__ = ["CompactContext", "RankedFacts", "TOPIC_POLICIES", "follow_chain", "choose_topic_policy",
           "compact_context", "path_support", "topk_context", "topk_contexts", "topk_contexts_per_question",
           "fact_sentences", "kinship_facts", "kinship_sentence"]

TOPIC_POLICIES = ("walk", "exclude_end", "avoid")


@dataclass
class CompactContext:
    """The compact fact set of one question.

    edge_ids:        the kept facts (sorted ids);
    answers:         every derived answer (entity ids), best supported first;
    support:         number of complete paths reaching each of `answers`;
    answers_in_context: the derived answers whose path is inside the kept facts;
    n_facts_full:    facts on all complete paths before the cap;
    capped:          True when the cap removed facts.
    """

    edge_ids: np.ndarray
    answers: np.ndarray
    support: np.ndarray
    answers_in_context: np.ndarray
    n_facts_full: int
    capped: bool
    truncated: bool = False

    @property
    def n_facts(self) -> int:
        return int(self.edge_ids.size)

    @property
    def derivable(self) -> bool:
        return bool(self.answers.size)


@dataclass
class RankedFacts:
    """The baseline context: facts best first, their similarity scores, and the pool they came from."""

    edge_ids: np.ndarray
    scores: np.ndarray
    pool_size: int
    hops: int
    meta: dict = field(default_factory=dict)

    @property
    def n_facts(self) -> int:
        return int(self.edge_ids.size)


_RELATIONS: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def _relation_set(kg) -> set:
    names = _RELATIONS.get(kg)
    if names is None:
        names = _RELATIONS[kg] = set(kg.relation_names.tolist())
    return names


def follow_chain(kg, topic_ids, chain, policy: str = "exclude_end"):
    """`KG.follow_chain` under a topic policy (see the module docstring); returns a ChainResult.

    A chain naming a relation the KG does not have derives nothing (an empty result).
    """
    from ....kg import ChainResult

    if policy not in TOPIC_POLICIES:
        raise ConfigError(f"topic policy must be one of {TOPIC_POLICIES} (got {policy!r}).")
    topic = np.unique(np.asarray(list(topic_ids), dtype=np.int64))
    empty = np.empty(0, dtype=np.int64)
    known = _relation_set(kg)
    if topic.size == 0 or not chain or any(r is not None and r not in known for r, _ in chain):
        return ChainResult(reached=empty, edge_ids=empty, frontiers=[topic], step_edge_ids=[empty] * len(chain),
                           step_entities=[empty] * (len(chain) + 1))
    if policy != "avoid":
        return kg.follow_chain(topic, list(chain), exclude_start=(policy == "exclude_end"))
    frontier, frontiers, step_edges = topic, [topic], []
    for rel, forward in chain:
        step = kg.follow_chain(frontier, [(rel, forward)])
        edges = step.step_edge_ids[0] if step.step_edge_ids else empty
        dst = (kg.tails if forward else kg.heads)[edges].astype(np.int64)
        keep = ~np.isin(dst, topic)
        step_edges.append(edges[keep])
        frontier = np.unique(dst[keep])
        frontiers.append(frontier)
    return kg.prune_chain(chain, step_edges, frontier, frontiers)


def _kg_getter(kg):
    """`item -> KG` for a KG (the same for every item) or a `QuestionKGs` (per-question subgraphs)."""
    return kg.kg_for if hasattr(kg, "kg_for") else (lambda item: kg)


def choose_topic_policy(kg, items: Sequence, max_items: int = 1000, seed: int = 0) -> tuple[str, list[dict]]:
    """The policy whose derived answers (gold chain) equal the gold answers most often on training items.

    `kg` is one KG or a `QuestionKGs` (each question's own subgraph, fetched once per item). Ties go
    to the earlier policy in TOPIC_POLICIES. Returns (policy, table).
    """
    items = [q for q in items if getattr(q, "chain", None) and q.answers]
    if len(items) > max_items:
        keep = np.sort(np.random.default_rng(seed).choice(len(items), size=max_items, replace=False))
        items = [items[i] for i in keep]
    kg_for = _kg_getter(kg)
    same = {policy: 0 for policy in TOPIC_POLICIES}
    n = 0
    for q in items:
        qkg = kg_for(q)
        ids = []
        for name in q.topic_entities:
            try:
                ids.append(int(qkg.entity_id(name)))
            except Exception:
                continue
        if not ids:
            continue
        n += 1
        gold = set(q.answers)
        for policy in TOPIC_POLICIES:
            res = follow_chain(qkg, ids, q.chain, policy)
            same[policy] += int(set(qkg.entity_names[res.reached].tolist()) == gold)
    table = [{"policy": policy, "n": n, "exact_answer_set_rate": same[policy] / n if n else float("nan")}
             for policy in TOPIC_POLICIES]
    best = max(table, key=lambda r: (r["exact_answer_set_rate"] if n else 0.0, -TOPIC_POLICIES.index(r["policy"])))
    return best["policy"], table


def _step_arrays(kg, chain, step_edges):
    """Per step: (edge ids, entity the step leaves from, entity it arrives at)."""
    out = []
    for (rel, forward), edges in zip(chain, step_edges):
        edges = np.asarray(edges, dtype=np.int64)
        src = (kg.heads if forward else kg.tails)[edges].astype(np.int64)
        dst = (kg.tails if forward else kg.heads)[edges].astype(np.int64)
        out.append((edges, src, dst))
    return out


def path_support(kg, chain, result) -> tuple[np.ndarray, np.ndarray]:
    """(entity ids, number of complete paths reaching each) at the end of a followed chain."""
    steps = _step_arrays(kg, chain, result.step_edge_ids)
    ents = np.asarray(result.step_entities[0], dtype=np.int64) if result.step_entities else np.empty(0, np.int64)
    counts = np.ones(ents.size)
    for edges, src, dst in steps:
        if edges.size == 0:
            return np.empty(0, np.int64), np.empty(0)
        idx = np.searchsorted(ents, src)
        idx[idx == ents.size] = 0
        ok = ents[idx] == src if ents.size else np.zeros(src.size, bool)
        weights = np.where(ok, counts[idx] if ents.size else 0.0, 0.0)
        ents, inverse = np.unique(dst, return_inverse=True)
        counts = np.bincount(inverse, weights=weights, minlength=ents.size)
    keep = np.isin(ents, result.reached) & (counts > 0)
    return ents[keep], counts[keep]


def compact_context(kg, topic_ids: Sequence[int], chain, max_facts: int | None = 20,
                    policy: str = "exclude_end") -> CompactContext:
    """Facts on complete chain paths from the topic, capped by the whole-path rule above."""
    if max_facts is not None and max_facts < 0:
        raise ConfigError(f"max_facts must be >= 0 or None (got {max_facts}).")
    topic_ids = np.asarray(list(topic_ids), dtype=np.int64)
    empty = np.empty(0, dtype=np.int64)
    if topic_ids.size == 0 or not chain:
        return CompactContext(empty, empty, np.empty(0), empty, 0, False)
    result = follow_chain(kg, topic_ids, chain, policy)
    if not result.derivable:
        return CompactContext(empty, empty, np.empty(0), empty, 0, False, result.truncated)
    answers, support = path_support(kg, chain, result)
    names = kg.entity_names[answers]
    order = np.lexsort((names.astype(str), -support))
    answers, support = answers[order], support[order]
    full = result.edge_ids
    if not max_facts or full.size <= max_facts:
        return CompactContext(full, answers, support, answers, int(full.size), False, result.truncated)
    kept, covered = _cap_paths(kg, chain, result, answers, max_facts)
    return CompactContext(kept, answers, support, covered, int(full.size), True, result.truncated)


def _cap_paths(kg, chain, result, answers: np.ndarray, max_facts: int) -> tuple[np.ndarray, np.ndarray]:
    """Greedy whole-path selection under the cap (see the module docstring)."""
    return _cap_paths_multi(kg, [(chain, result)], answers, max_facts)


def _cap_paths_multi(kg, branches, answers: np.ndarray, max_facts: int) -> tuple[np.ndarray, np.ndarray]:
    """The whole-path cap rule over one or several (chain, followed result) branches that all end at
    the answers: per answer, one path per branch (the rule's preferences within each branch); an
    answer enters only with all its paths, unless that would pass the cap (the first always enters)."""
    walks = []
    for chain, result in branches:
        steps = _step_arrays(kg, chain, result.step_edge_ids)
        # per step: edges grouped by arrival entity, for the backward walk
        by_dst = []
        for edges, src, dst in steps:
            order = np.lexsort((edges, dst))
            by_dst.append((dst[order], src[order], edges[order]))
        # support of every entity on every position (paths from the topic to it), for preferences
        support_at = [dict()]
        for e in result.step_entities[0]:
            support_at[0][int(e)] = 1.0
        for edges, src, dst in steps:
            nxt: dict[int, float] = {}
            for s, d in zip(src.tolist(), dst.tolist()):
                nxt[d] = nxt.get(d, 0.0) + support_at[-1].get(s, 0.0)
            support_at.append(nxt)
        walks.append((len(steps), by_dst, support_at, [set() for _ in range(len(steps) + 1)]))
    kept: set[int] = set()
    covered = []
    for answer in answers.tolist():
        chosen = []
        for n_steps, by_dst, support_at, on_path in walks:
            path_edges, path_nodes, node = [], [answer], answer
            for i in range(n_steps - 1, -1, -1):
                dsts, srcs, eids = by_dst[i]
                lo, hi = np.searchsorted(dsts, node, "left"), np.searchsorted(dsts, node, "right")
                if lo == hi:  # cannot happen on pruned steps; guard anyway
                    path_edges = None
                    break
                cands = list(zip(srcs[lo:hi].tolist(), eids[lo:hi].tolist()))
                src, eid = min(cands, key=lambda c: (c[1] not in kept, c[0] not in on_path[i],
                                                     -support_at[i].get(c[0], 0.0), c[1]))
                path_edges.append(eid)
                path_nodes.append(src)
                node = src
            if path_edges is None:
                break
            chosen.append((path_edges, path_nodes, on_path))
        if len(chosen) < len(walks):
            continue
        new = list(dict.fromkeys(e for path_edges, _, _ in chosen for e in path_edges if e not in kept))
        if kept and len(kept) + len(new) > max_facts:
            continue
        kept.update(new)
        for _, path_nodes, on_path in chosen:
            for pos, n in enumerate(reversed(path_nodes)):
                on_path[pos].add(n)
        covered.append(answer)
        if len(kept) >= max_facts:
            break
    return np.array(sorted(kept), dtype=np.int64), np.array(covered, dtype=np.int64)


# ----------------------------------------------------------------------------- the baseline
def fact_sentences(kg, edge_ids) -> list[str]:
    """One plain sentence per fact ("Heat directed by Michael Mann"), the text that is embedded."""
    return [f"{h} {r.replace('_', ' ')} {t}" for h, r, t in kg.triples(edge_ids)]


def topk_context(kg, question: str, topic_ids: Sequence[int], hops: int, embedder, k: int = 100,
                 pool: int | None = 3000) -> RankedFacts:
    """The k facts of the topic's `hops`-hop neighbourhood most similar to the question."""
    return topk_contexts(kg, [question], [topic_ids], [hops], embedder, k=k, pool=pool)[0]


def topk_contexts(kg, questions: Sequence[str], topic_lists: Sequence[Sequence[int]], hops: Sequence[int], embedder,
                  k: int = 100, pool: int | None = 3000, progress: bool | None = None) -> list[RankedFacts]:
    """`topk_context` for many questions, embedding the union of their candidate facts once."""
    if k < 1:
        raise ConfigError(f"k must be >= 1 (got {k}).")
    pools = []
    for topics, h in zip(topic_lists, hops):
        topics = np.asarray(list(topics), dtype=np.int64)
        pools.append(kg.khop_edges(topics, max(int(h), 1), max_edges=pool) if topics.size else np.empty(0, np.int64))
    union = np.unique(np.concatenate(pools)) if pools else np.empty(0, np.int64)
    out: list[RankedFacts] = []
    if union.size == 0:
        return [RankedFacts(p, np.empty(0, np.float32), 0, int(h)) for p, h in zip(pools, hops)]
    fact_vecs = embedder.encode(fact_sentences(kg, union), progress=progress)
    qvecs = embedder.encode([str(q) for q in questions])
    for candidates, qvec, h in zip(pools, qvecs, hops):
        if candidates.size == 0:
            out.append(RankedFacts(candidates, np.empty(0, np.float32), 0, int(h)))
            continue
        scores = fact_vecs[np.searchsorted(union, candidates)] @ qvec
        order = np.lexsort((candidates, -scores))[:k]
        out.append(RankedFacts(candidates[order], scores[order].astype(np.float32), int(candidates.size), int(h)))
    return out


def topk_contexts_per_question(kgs: Sequence, questions: Sequence[str], topic_lists: Sequence[Sequence[int]],
                               embedder, k: int = 100, pool: int | None = 3000, hops: Sequence[int | None] | None = None,
                               progress: bool | None = None) -> list[RankedFacts]:
    """`topk_contexts` where each question has its own KG (RoG's subgraphs).

    The pool of question i is the facts of `kgs[i]` within `hops[i]` hops of its topic entities, or,
    for hops None (the default), its whole subgraph reachable from the topic - what SubgraphRAG
    ranks - nearer hops first when it exceeds `pool`. All sentences of the batch are embedded in
    one call (repeated sentences once).
    """
    if k < 1:
        raise ConfigError(f"k must be >= 1 (got {k}).")
    hops = [None] * len(kgs) if hops is None else list(hops)
    pools, sentences = [], []
    for kg, topics, h in zip(kgs, topic_lists, hops):
        topics = np.asarray(list(topics), dtype=np.int64)
        radius = max(int(kg.num_entities), 1) if h is None else max(int(h), 1)
        cand = kg.khop_edges(topics, radius, max_edges=pool) if topics.size and kg.num_edges else np.empty(0, np.int64)
        pools.append(cand)
        sentences.append(fact_sentences(kg, cand) if cand.size else [])
    unique = list(dict.fromkeys(t for sent in sentences for t in sent))
    if not unique:
        return [RankedFacts(p, np.empty(0, np.float32), 0, int(h or 0), {"pool": "subgraph"}) for p, h in zip(pools, hops)]
    position = {t: i for i, t in enumerate(unique)}
    fact_vecs = embedder.encode(unique, progress=progress)
    qvecs = embedder.encode([str(q) for q in questions])
    out: list[RankedFacts] = []
    for candidates, sent, qvec, h in zip(pools, sentences, qvecs, hops):
        meta = {"pool": "subgraph" if h is None else f"{h} hops"}
        if candidates.size == 0:
            out.append(RankedFacts(candidates, np.empty(0, np.float32), 0, int(h or 0), meta))
            continue
        scores = fact_vecs[np.fromiter((position[t] for t in sent), dtype=np.int64, count=len(sent))] @ qvec
        order = np.lexsort((candidates, -scores))[:k]
        out.append(RankedFacts(candidates[order], scores[order].astype(np.float32), int(candidates.size), int(h or 0), meta))
    return out


# ----------------------------------------------------------------------------- kinship
def kinship_sentence(head: str, word: str, tail: str) -> str:
    """Story fact (a, son, b) as the sentence the store writes: "b is the son of a"."""
    return f"{tail} is the {word} of {head}."


def kinship_facts(graph, path) -> list[tuple[str, str, str]]:
    """The story's own (surface) facts used by a derivation path, in path order."""
    return [graph.surface[idx] for _, _, _, idx, _ in path]
