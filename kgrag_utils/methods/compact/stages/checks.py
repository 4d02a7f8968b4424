"""The two checks outside the LLM: derivability and consistency, each saying when it can apply.

Derivability - does an answer follow from the context? For a KG question: is there a complete
instance of the chain from the topic entity to some entity using only the context's facts. For
a kinship story: do the rules compose the path between the two query people to a relation.

Consistency - do the context's facts conflict? Three signals, each reported with whether it
could apply at all (the paper stresses how rarely path evidence exists):
  * rival derivations (KG): another well-supported proposed chain also derives answers from the
    topic, and its answers differ - two derivations of different relations for the same pair;
  * functional conflicts (KG): a relation that is functional in the KG (one tail per head for
    >= 98% of heads, e.g. release_year) appears with two tails for one head inside the context;
  * kinship: the rules derive more than one relation for the query pair (ambiguous bracketing),
    or a second path joins the pair and derives something different.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass, field
from typing import Sequence

import numpy as np

from .context import follow_chain
from .knowledge import ChainProposal

__all__ = ["ChainSelection", "ConsistencyReport", "select_derivable", "context_derivation",
           "functional_relations", "relation_ids", "kg_consistency", "kinship_consistency"]


@dataclass
class ChainSelection:
    """The derivability check over ranked proposals: the first chain that derives something."""

    index: int | None              # position of the chosen proposal (None: nothing derivable)
    proposal: ChainProposal | None
    tried: list[dict]              # [{chain, source, score, derivable, n_answers}] in order
    answers_by_index: dict[int, np.ndarray] = field(default_factory=dict)

    @property
    def derivable(self) -> bool:
        return self.index is not None


def select_derivable(kg, topic_ids: Sequence[int], proposals: Sequence[ChainProposal], max_candidates: int = 5,
                     policy: str = "exclude_end") -> ChainSelection:
    """Walk the ranked proposals; keep the first whose chain reaches an entity from the topic."""
    topic_ids = list(topic_ids)
    tried, answers = [], {}
    chosen = None
    for i, prop in enumerate(proposals[:max(1, max_candidates)]):
        reached = follow_chain(kg, topic_ids, prop.chain, policy).reached
        answers[i] = reached
        tried.append({**prop.to_record(), "derivable": bool(reached.size), "n_answers": int(reached.size)})
        if reached.size and chosen is None:
            chosen = i
            # keep walking only to collect rivals for the consistency check
    if chosen is None:
        return ChainSelection(None, None, tried, answers)
    return ChainSelection(chosen, proposals[chosen], tried, answers)


def context_derivation(kg, topic_names: Sequence[str], chain, edge_ids, policy: str = "exclude_end") -> list[str]:
    """Names of the entities the chain derives from the topic using only the given facts."""
    edge_ids = np.asarray(edge_ids, dtype=np.int64)
    if edge_ids.size == 0 or not chain:
        return []
    sub = kg.subgraph_kg(edge_ids)
    starts = []
    for name in topic_names:
        try:
            starts.append(sub.entity_id(name))
        except Exception:  # the topic is not in the context
            continue
    if not starts:
        return []
    res = follow_chain(sub, starts, chain, policy)
    return sorted(str(x) for x in sub.entity_names[res.reached])


_FUNCTIONAL_CACHE: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()  # per KG; per-question KGs are not kept alive


def functional_relations(kg, min_share: float = 0.98) -> np.ndarray:
    """Sorted ids of relations whose heads (>= min_share of them) have exactly one tail."""
    cached = _FUNCTIONAL_CACHE.get(kg)
    if cached is not None and cached[0] == min_share:
        return cached[1]
    heads = kg.heads.astype(np.int64)
    rels = kg.rels.astype(np.int64)
    pair = heads * max(kg.num_relations, 1) + rels
    uniq, counts = np.unique(pair, return_counts=True)
    rel_of = uniq % max(kg.num_relations, 1)
    single = np.bincount(rel_of, weights=(counts == 1).astype(float), minlength=kg.num_relations)
    total = np.bincount(rel_of, minlength=kg.num_relations)
    share = np.divide(single, total, out=np.zeros_like(single), where=total > 0)
    out = np.flatnonzero(share >= min_share).astype(np.int64)
    _FUNCTIONAL_CACHE[kg] = (min_share, out)
    return out


def relation_ids(kg, names) -> np.ndarray:
    """Sorted ids in `kg` of the relation names given (names the KG lacks are skipped)."""
    return np.flatnonzero(np.isin(kg.relation_names.astype(str), np.asarray(list(names), dtype=str))).astype(np.int64)


@dataclass
class ConsistencyReport:
    """Which consistency signals could apply, what conflicts they found, and the verdict."""

    applicable: dict[str, bool]
    conflicts: dict[str, list]

    @property
    def consistent(self) -> bool:
        return not any(self.conflicts.values())

    @property
    def any_applicable(self) -> bool:
        return any(self.applicable.values())

    def to_record(self) -> dict:
        return {"consistent": self.consistent, "applicable": dict(self.applicable),
                "conflicts": {k: v for k, v in self.conflicts.items() if v}}


def kg_consistency(kg, selection: ChainSelection, context_edges, rival_min_score: float = 0.2,
                   functional: np.ndarray | None = None) -> ConsistencyReport:
    """Rival derivations among the proposals, and functional-relation conflicts inside the context.

    `functional`: ids of the KG's functional relations (default: counted on `kg` itself; for
    per-question subgraphs the pipeline passes those learned from training subgraphs)."""
    applicable = {"rival_derivations": False, "functional_conflict": False}
    conflicts: dict[str, list] = {"rival_derivations": [], "functional_conflict": []}
    if selection.derivable:
        mine = selection.answers_by_index[selection.index]
        for i, rec in enumerate(selection.tried):
            if i == selection.index or not rec["derivable"] or rec["score"] < rival_min_score \
                    or rec["source"].endswith("fallback"):
                continue
            applicable["rival_derivations"] = True
            other = selection.answers_by_index[i]
            if not np.array_equal(np.sort(other), np.sort(mine)):
                conflicts["rival_derivations"].append(rec["chain"])
    edges = np.asarray(context_edges, dtype=np.int64)
    if edges.size:
        if functional is None:
            functional = functional_relations(kg)
        rels = kg.rels[edges].astype(np.int64)
        mask = np.isin(rels, functional)
        if mask.any():
            applicable["functional_conflict"] = True
            e = edges[mask]
            key = kg.heads[e].astype(np.int64) * max(kg.num_relations, 1) + kg.rels[e]
            uniq, counts = np.unique(key, return_counts=True)
            for k in uniq[counts > 1][:5]:
                head, rel = divmod(int(k), max(kg.num_relations, 1))
                tails = sorted(str(kg.entity_names[t]) for t in kg.tails[e[key == k]])
                conflicts["functional_conflict"].append(
                    f"{kg.entity_names[head]} {kg.relation_names[rel]}: {' / '.join(tails)}")
    return ConsistencyReport(applicable, conflicts)


def kinship_consistency(derivation) -> ConsistencyReport:
    """Ambiguous compositions and disagreeing second paths for a kinship derivation."""
    longest = max((len(p) for p in derivation.paths), default=0)
    applicable = {"ambiguous_composition": longest >= 3, "second_path": len(derivation.paths) >= 2}
    conflicts: dict[str, list] = {"ambiguous_composition": [], "second_path": []}
    if derivation.ambiguous:
        conflicts["ambiguous_composition"] = sorted(derivation.candidates)
    if derivation.paths_disagree:
        conflicts["second_path"] = [sorted(c) for c in derivation.per_path]
    return ConsistencyReport(applicable, conflicts)
