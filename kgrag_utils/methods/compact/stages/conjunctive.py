"""Conjunctive questions: several chains, one from each topic entity, meeting at the answer.

WC2014's "name a player who plays at [Forward] position at the club [FC_X]" is two chains,
Forward -plays_position_inverse-> ?p and FC_X -plays_in_club_inverse-> ?p; the answers are the
entities BOTH reach. Compact relation selection derives each chain and intersects:

* relation knowledge reads the question once per branch (`branch_views`): a view is a one-chain
  question whose topic is that branch's topic, with the other topics marked as such (the lexicon's
  <Y>, the kNN vote's [Y]); training questions give one view per gold branch, with its chain;
  an evaluated question gives one view per topic entity (its chains are never read, only kept
  to score the prediction);
* the derivability check (`select_conjunctive`) tries the branches' ranked proposals together and
  keeps the best-ranked combination (lowest rank sum) whose chains reach a common entity;
* the compact context (`conjunctive_context`) keeps, for each answer in that intersection, the
  facts of one complete path per branch (the whole-path cap rule of `context.py`, applied to all
  branches at once); an answer is supported by the product of its branches' path counts.
"""

from __future__ import annotations

import dataclasses
import itertools
from typing import Sequence

import numpy as np

from .checks import ChainSelection
from .context import CompactContext, _cap_paths_multi, follow_chain, path_support
from .knowledge import ChainProposal

__all__ = ["branch_views", "expand_branches", "select_conjunctive", "conjunctive_context", "restrict_to"]


def _is_conjunctive(question) -> bool:
    return bool(getattr(question, "conjunctive", False))


def branch_views(question) -> list:
    """One single-chain view per branch of a conjunctive question (the question itself otherwise).

    Each view keeps the question's text and answers; its topic is the branch's topic, `meta`
    names the other topics (`other_topics`), every branch's relations (`align_relations`, what
    the question's words are aligned with) and the question it belongs to (`branch_of`, `branch`).
    `chain` is the branch's gold chain (scoring and training only).
    """
    if not _is_conjunctive(question):
        return [question]
    branches = question.gold_branches()
    topics = [t for t, _ in branches]
    relations = list(dict.fromkeys(r for _, chain in branches for r, _ in chain))
    views = []
    for j, (topic, chain) in enumerate(branches):
        meta = {**question.meta, "other_topics": [t for t in topics if t != topic], "align_relations": relations,
                "branch_of": question.qid, "branch": j}
        views.append(dataclasses.replace(question, qid=f"{question.qid}#b{j}", topic_entities=[topic],
                                         chain=list(chain), hops=len(chain), branches=None, meta=meta))
    return views


def expand_branches(items: Sequence) -> list:
    """Items with every conjunctive question replaced by its branch views (others unchanged)."""
    return [view for item in items for view in branch_views(item)]


def select_conjunctive(kg, branch_topic_ids: Sequence[Sequence[int]], branch_proposals: Sequence[Sequence[ChainProposal]],
                       max_candidates: int = 5, policy: str = "exclude_end") -> tuple[list[ChainSelection], np.ndarray]:
    """The derivability check over all branches at once.

    Tries each branch's first `max_candidates` proposals; among the combinations whose chains all
    derive something and whose derivations share an entity, keeps the one with the lowest rank sum
    (ties: lexicographic). Returns one ChainSelection per branch (index None everywhere when no
    combination meets) and the intersection (sorted entity ids).
    """
    per_branch = []
    for topic_ids, proposals in zip(branch_topic_ids, branch_proposals):
        tried, answers = [], {}
        for i, prop in enumerate(list(proposals)[:max(1, max_candidates)]):
            reached = follow_chain(kg, list(topic_ids), prop.chain, policy).reached
            answers[i] = reached
            tried.append({**prop.to_record(), "derivable": bool(reached.size), "n_answers": int(reached.size)})
        per_branch.append((list(proposals), tried, answers))
    ranges = [[i for i in range(len(t)) if a[i].size] for _, t, a in per_branch]
    best, meet = None, np.empty(0, dtype=np.int64)
    if all(ranges):
        for combo in sorted(itertools.product(*ranges), key=lambda c: (sum(c), c)):
            inter = per_branch[0][2][combo[0]]
            for b, i in enumerate(combo[1:], 1):
                inter = np.intersect1d(inter, per_branch[b][2][i])
                if not inter.size:
                    break
            if inter.size:
                best, meet = combo, inter.astype(np.int64)
                break
    selections = []
    for b, (proposals, tried, answers) in enumerate(per_branch):
        if best is None:
            selections.append(ChainSelection(None, None, tried, answers))
        else:
            selections.append(ChainSelection(best[b], proposals[best[b]], tried, answers))
    return selections, meet


def restrict_to(kg, chain, result, targets: np.ndarray):
    """A followed chain cut down to the complete paths that end in `targets` (a ChainResult)."""
    ends = np.intersect1d(result.reached, np.asarray(targets, dtype=np.int64))
    return kg.prune_chain(chain, result.step_edge_ids, ends, result.frontiers, result.truncated)


def conjunctive_context(kg, branch_topic_ids: Sequence[Sequence[int]], chains: Sequence, max_facts: int | None = 20,
                        policy: str = "exclude_end") -> CompactContext:
    """Facts on complete paths of every branch to the answers all branches reach, under the cap."""
    empty = np.empty(0, dtype=np.int64)
    if not chains or any(not c for c in chains) or any(len(t) == 0 for t in branch_topic_ids):
        return CompactContext(empty, empty, np.empty(0), empty, 0, False)
    results = [follow_chain(kg, list(t), c, policy) for t, c in zip(branch_topic_ids, chains)]
    meet = results[0].reached
    for r in results[1:]:
        meet = np.intersect1d(meet, r.reached)
    truncated = any(r.truncated for r in results)
    if not meet.size:
        return CompactContext(empty, empty, np.empty(0), empty, 0, False, truncated)
    results = [restrict_to(kg, c, r, meet) for c, r in zip(chains, results)]
    support = np.ones(meet.size)
    for c, r in zip(chains, results):
        ents, counts = path_support(kg, c, r)
        support *= counts[np.searchsorted(ents, meet)]
    names = kg.entity_names[meet]
    order = np.lexsort((names.astype(str), -support))
    answers, support = meet[order], support[order]
    full = np.unique(np.concatenate([r.edge_ids for r in results]))
    if not max_facts or full.size <= max_facts:
        return CompactContext(full, answers, support, answers, int(full.size), False, truncated)
    kept, covered = _cap_paths_multi(kg, list(zip(chains, results)), answers, max_facts)
    return CompactContext(kept, answers, support, covered, int(full.size), True, truncated)
