"""Relation chains: what following one found (`ChainResult`) and the backward pruning to complete paths.

A chain is followed forwards, step by step, from a set of start entities; only the facts on
complete paths (start -> ... -> an end entity) are kept. `complete_paths` is that pruning, the one
primitive behind `KG.follow_chain`, `KG.prune_chain` and the Compact method's topic policies and
conjunctive branches: walk the steps backwards from the end entities, keeping at each step the
facts whose far end is still alive.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

import numpy as np

from .arrays import in_sorted

__all__ = ["ChainResult", "complete_paths"]


@dataclass(frozen=True)
class ChainResult:
    """What following a relation chain found.

    reached:       sorted unique entity ids at the end of some complete path.
    edge_ids:      sorted unique ids of the facts that lie on at least one complete path from a
                   start entity to a reached entity (dead-end branches are pruned away).
    frontiers:     entity ids touched before pruning: frontiers[0] is the start set and
                   frontiers[i] the entities reached after step i (len == len(chain) + 1).
    step_edge_ids: per step, the facts of that step that lie on a complete path.
    step_entities: per position, the entities that lie on a complete path (pruned frontiers;
                   step_entities[0] are the start entities that derive something).
    truncated:     True when `max_paths_facts` cut a step short (the result is then a subset).
    """

    reached: np.ndarray
    edge_ids: np.ndarray
    frontiers: list[np.ndarray]
    step_edge_ids: list[np.ndarray] = field(default_factory=list)
    step_entities: list[np.ndarray] = field(default_factory=list)
    truncated: bool = False

    @property
    def num_facts(self) -> int:
        return int(self.edge_ids.size)

    @property
    def derivable(self) -> bool:
        """True when at least one complete path exists."""
        return bool(self.reached.size)


def complete_paths(heads: np.ndarray, tails: np.ndarray, steps: Sequence[tuple[np.ndarray, bool]], ends: np.ndarray,
                   frontiers: list[np.ndarray], truncated: bool = False) -> ChainResult:
    """The facts of a followed chain that lie on a complete path to one of `ends`.

    steps:     per chain step, (ids of the facts that step expanded, forward); forward=True walked
               head -> tail. Each step's facts must leave the entities the step started from
               (its frontier); facts that lead nowhere are pruned.
    ends:      sorted unique entity ids accepted at the end of a path (they become `reached`).
    frontiers: the entities touched before pruning, stored unchanged in the result.
    """
    alive = np.asarray(ends, dtype=np.int64)
    step_edges: list[np.ndarray] = []
    step_entities = [alive]
    for edges, forward in reversed(list(steps)):
        edges = np.asarray(edges, dtype=np.int64)
        src = (heads if forward else tails)[edges].astype(np.int64)
        dst = (tails if forward else heads)[edges].astype(np.int64)
        keep = in_sorted(dst, alive)
        step_edges.append(np.unique(edges[keep]))
        alive = np.unique(src[keep])
        step_entities.append(alive)
    step_edges.reverse()
    step_entities.reverse()
    edge_ids = np.unique(np.concatenate(step_edges)) if step_edges else np.empty(0, dtype=np.int64)
    return ChainResult(reached=np.asarray(ends, dtype=np.int64), edge_ids=edge_ids.astype(np.int64),
                       frontiers=frontiers, step_edge_ids=step_edges, step_entities=step_entities,
                       truncated=truncated)
