"""Retrieval and answer metrics of one example (their means over a run: `summary.py`).

recall@k: share of gold units covered by the first k distinct retrieved passages; SF-EM@k: 1 when
all of them are. Units are HotpotQA's supporting sentences (covered by the passage holding the
sentence) or supporting documents; `doc_recall@k` / `doc_sf_em@k` always count documents (a
document is found when any of its passages is), which is what a question's-own-paragraphs
baseline measures. With one passage per unit these equal `metrics.recall_at_k` / `sf_em_at_k`.
Answers: SQuAD EM and F1 (`metrics.exact_match`, `metrics.f1`).
"""

from __future__ import annotations

from typing import Iterable, Sequence

import numpy as np

from .... import metrics
from .docsets import GoldUnits

__all__ = ["first_ranks", "coverage_metrics", "retrieval_metrics", "answer_metrics", "metric_keys"]


def first_ranks(ranked: Sequence[int], cover: list[np.ndarray]) -> np.ndarray:
    """For each unit, the 0-based position of the first distinct retrieved passage covering it (inf if none)."""
    position: dict[int, int] = {}
    for i in ranked:
        position.setdefault(int(i), len(position))
    out = np.full(len(cover), np.inf)
    for u, passages in enumerate(cover):
        hits = [position[int(p)] for p in passages if int(p) in position]
        if hits:
            out[u] = min(hits)
    return out


def coverage_metrics(ranked: Sequence[int], cover: list[np.ndarray], ks: Iterable[int], prefix: str = "") -> dict:
    """recall@k and sf_em@k for each k (nan for every k when there is no gold unit)."""
    ranks = first_ranks(ranked, cover)
    out = {}
    for k in ks:
        if ranks.size == 0:
            out[f"{prefix}recall@{k}"] = out[f"{prefix}sf_em@{k}"] = float("nan")
            continue
        found = ranks < k
        out[f"{prefix}recall@{k}"] = float(found.mean())
        out[f"{prefix}sf_em@{k}"] = float(found.all())
    return out


def retrieval_metrics(ranked: Sequence[int], gold: GoldUnits, ks: Iterable[int]) -> dict:
    ks = list(ks)
    out = coverage_metrics(ranked, gold.cover, ks)
    out.update(coverage_metrics(ranked, gold.doc_cover, ks, prefix="doc_"))
    ranks = first_ranks(ranked, gold.cover)
    out["gold_units"] = len(gold.units)
    out["gold_units_in_set"] = int(sum(c.size > 0 for c in gold.cover))
    out["gold_first_ranks"] = [None if not np.isfinite(r) else int(r) for r in ranks]
    return out


def answer_metrics(prediction: str | None, answers: Sequence[str]) -> dict:
    return {"em": metrics.exact_match(prediction, answers), "f1": metrics.f1(prediction, answers),
            "containment": metrics.containment(prediction, answers)}


def metric_keys(ks: Iterable[int], reader: bool) -> list[str]:
    ks = list(ks)
    keys = [f"recall@{k}" for k in ks] + [f"sf_em@{k}" for k in ks]
    keys += [f"doc_recall@{k}" for k in ks] + [f"doc_sf_em@{k}" for k in ks]
    if reader:
        keys += ["em", "f1", "containment"]
    return keys
