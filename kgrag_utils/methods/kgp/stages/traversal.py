"""KGP's traversal: TF-IDF seeds, a queue of reasoning paths, next-evidence ranking of neighbours.

    seeds <- TF-IDF(question)                     (n_seeds passages, retrieved first)
    queue <- one path per seed
    while retrieved < budget:
        path <- dequeue                           (a batch of paths at once, in queue order)
        query <- next_evidence(question, path)    (LLM; or the question itself: "nollm")
        cands <- unvisited neighbours of path[-1] (every unvisited passage: "nograph")
        for node in top-b(cands, sim(query, .)):  retrieve node; enqueue path + node   ("multi")
    "onehop" (the reference code) expands only seed paths. When the queue runs dry before the
    budget, the next TF-IDF passages for the question become new seeds ("reseed", recorded).

The result lists passages in retrieval order ("visit") or grouped by reasoning path, each seed
followed by its descendants ("path"). The flat baselines "tfidf" and "knn" return the top
`budget` passages for the question.
"""

from __future__ import annotations

import math
import time
from collections import deque
from dataclasses import dataclass, field
from typing import Callable, Sequence

import numpy as np

from ..config import KGPConfig
from .graphs import PassageGraph
from .similarity import SetIndex, top_k

__all__ = ["Evidence", "TraversalResult", "traverse", "flat_retrieve", "path_order", "question_evidence"]


@dataclass
class Evidence:
    """The query that ranks one path's candidates, and what producing it cost."""

    text: str
    raw: str | None = None
    prompt: str | None = None
    failed: bool = False
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached: bool = False
    seconds: float = 0.0


#: next_evidence(question, paths) -> one Evidence per path (a path is a tuple of passage indices)
EvidenceFn = Callable[[str, Sequence[tuple[int, ...]]], list[Evidence]]


def question_evidence(question: str, paths: Sequence[tuple[int, ...]]) -> list[Evidence]:
    """The no-LLM agent: the question is the query at every hop."""
    return [Evidence(text=question) for _ in paths]


@dataclass
class TraversalResult:
    ranked: list[int]
    seeds: list[int]
    seed_scores: list[float]
    hops: list[dict] = field(default_factory=list)
    parent: dict[int, int | None] = field(default_factory=dict)
    n_reseeds: int = 0
    n_agent_calls: int = 0
    seconds: float = 0.0

    def paths(self) -> list[list[int]]:
        """Every retrieved passage's reasoning path from its seed."""
        out = []
        for node in self.ranked:
            path = [node]
            while self.parent.get(path[-1]) is not None:
                path.append(self.parent[path[-1]])
            out.append(path[::-1])
        return out


def path_order(ranked: Sequence[int], parent: dict[int, int | None]) -> list[int]:
    """Depth-first over the path tree: each seed followed by its descendants, in retrieval order."""
    children: dict[int | None, list[int]] = {}
    for node in ranked:
        children.setdefault(parent.get(node), []).append(node)
    out: list[int] = []
    stack = list(reversed(children.get(None, [])))
    while stack:
        node = stack.pop()
        out.append(node)
        stack.extend(reversed(children.get(node, [])))
    return out


def flat_retrieve(index: SetIndex, question: str, kind: str, budget: int) -> TraversalResult:
    """Top-`budget` passages for the question by TF-IDF ("tfidf") or embedding ("knn") cosine."""
    t0 = time.perf_counter()
    scores = index.scores("tfidf" if kind == "tfidf" else "embedding", [question])[0]
    idx, sc = top_k(scores, budget)
    ranked = idx.tolist()
    return TraversalResult(ranked=ranked, seeds=ranked, seed_scores=sc.tolist(), parent={i: None for i in ranked},
                           seconds=time.perf_counter() - t0)


def _candidates(graph: PassageGraph | None, node: int, visited: np.ndarray, n: int) -> np.ndarray:
    cands = graph.neighbors(node) if graph is not None else np.arange(n)
    return cands[~visited[cands]]


def traverse(question: str, index: SetIndex, graph: PassageGraph | None, cfg: KGPConfig,
             next_evidence: EvidenceFn = question_evidence) -> TraversalResult:
    """Run the traversal (see the module docstring); `graph=None` means every passage is a candidate."""
    t0 = time.perf_counter()
    n = len(index)
    budget, b = min(cfg.budget, n), cfg.branching
    seed_rank, seed_rank_scores = top_k(index.tfidf_scores([question])[0], n)
    seed_rank, seed_rank_scores = seed_rank.tolist(), seed_rank_scores.tolist()
    n_seeds = min(cfg.seeds_count, budget)
    seeds = seed_rank[:n_seeds]
    ranked: list[int] = list(seeds)
    visited = np.zeros(n, dtype=bool)
    visited[seeds] = True
    parent: dict[int, int | None] = {s: None for s in seeds}
    queue: deque[tuple[int, ...]] = deque((s,) for s in seeds)
    next_seed = n_seeds
    hops: list[dict] = []
    reseeds = calls = 0
    while len(ranked) < budget:
        if not queue:
            if not cfg.reseed:
                break
            while next_seed < n and visited[seed_rank[next_seed]]:
                next_seed += 1
            if next_seed >= n:
                break
            s = seed_rank[next_seed]
            visited[s] = True
            ranked.append(s)
            parent[s] = None
            queue.append((s,))
            reseeds += 1
            continue
        need = math.ceil((budget - len(ranked)) / b)
        batch = [queue.popleft() for _ in range(min(need, len(queue)))]
        # the agent is asked only about paths whose last passage still has unvisited neighbours
        open_paths = [p for p in batch if _candidates(graph, p[-1], visited, n).size]
        asked = dict(zip(open_paths, next_evidence(question, open_paths))) if open_paths else {}
        calls += len(open_paths)
        for path in batch:
            if len(ranked) >= budget:
                break
            cur = path[-1]
            cands = _candidates(graph, cur, visited, n)
            ev = asked.get(path, Evidence(text=question))
            hop = {"path": list(path), "agent_called": path in asked, "query": ev.text, "evidence_prompt": ev.prompt, "evidence_raw": ev.raw,
                   "evidence_failed": ev.failed,
                   "prompt_tokens": ev.prompt_tokens, "completion_tokens": ev.completion_tokens,
                   "cached": ev.cached, "seconds": ev.seconds, "n_candidates": int(cands.size), "chosen": [],
                   "scores": []}
            if cands.size:
                scores = index.scores(cfg.similarity, [ev.text], cands)[0]
                chosen, sc = top_k(scores, min(b, budget - len(ranked)), cands)
                for node in chosen.tolist():
                    visited[node] = True
                    ranked.append(node)
                    parent[node] = cur
                    if cfg.mode == "multi":
                        queue.append(path + (node,))
                hop["chosen"], hop["scores"] = chosen.tolist(), [round(float(x), 5) for x in sc]
            hops.append(hop)
    if cfg.rank_order == "path":
        ranked = path_order(ranked, parent)
    return TraversalResult(ranked=ranked, seeds=seeds, seed_scores=seed_rank_scores[:n_seeds], hops=hops,
                           parent=parent, n_reseeds=reseeds, n_agent_calls=calls, seconds=time.perf_counter() - t0)
