"""Self-consistency for SimGRAG patterns (config `samples=n`): n patterns, each retrieved and answered, one vote.

Sample 0 is the greedy pattern (the one `samples=1` writes, so its call is a response-cache hit
after a greedy run); samples 1..n-1 are drawn at `sample_temperature` with seeds 1..n-1, so a rerun
draws the same ones. Each sample goes through retrieval and the reader on its own. The vote: a
sample's weight is exp(-GSD) of its best subgraph (a pattern whose match is close counts more; a
sample without a usable pattern, a subgraph or an answer has no vote), every answer a sample gives
collects its weight, and the answers are ranked by their total weight (ties: the order in which
the samples named them). The record of the question is the representative sample's (the heaviest
sample that names the winning answer, else the greedy one), so the stage blame and the evidence are
those of one real pattern; every sample is kept in `record["samples"]`, and the record's tokens and
LLM seconds are the sums over the samples.
"""

from __future__ import annotations

import math
from typing import Sequence

from ....metrics import normalize_answer

__all__ = ["sample_answers", "sample_weight", "vote", "merge_samples", "sample_summary"]


def sample_answers(record: dict, answered: bool) -> list[str]:
    """What a sample answers: the reader's answers, or without a reader the top-1 subgraph's answer node."""
    if answered:
        return [a for a in record.get("answers") or [] if a]
    top = record.get("top1_answer")
    return [top] if top else []


def sample_weight(record: dict, answered: bool = True) -> float:
    """exp(-GSD of the best subgraph); 0 for a sample without a usable pattern, a subgraph or an answer."""
    subgraphs = record.get("subgraphs") or []
    if not record.get("pattern_ok") or not subgraphs or not sample_answers(record, answered):
        return 0.0
    return math.exp(-float(subgraphs[0].get("gsd", 0.0)))


def vote(records: Sequence[dict], answered: bool = True) -> tuple[list[str], int, dict[str, float]]:
    """(answers ranked by total weight, index of the representative sample, {answer: total weight})."""
    totals: dict[str, float] = {}
    shown: dict[str, str] = {}
    for rec in records:
        w = sample_weight(rec, answered)
        if w <= 0:
            continue
        for a in dict.fromkeys(sample_answers(rec, answered)):  # an answer counts once per sample
            key = normalize_answer(a) or a
            shown.setdefault(key, a)
            totals[key] = totals.get(key, 0.0) + w
    ranked = sorted(totals, key=lambda k: -totals[k])  # stable: first-named first among ties
    answers = [shown[k] for k in ranked]
    rep = 0
    if ranked:
        best = ranked[0]
        holders = [i for i, rec in enumerate(records)
                   if best in {normalize_answer(a) or a for a in sample_answers(rec, answered)}
                   and sample_weight(rec, answered) > 0]
        rep = max(holders, key=lambda i: (sample_weight(records[i], answered), -i))
    return answers, rep, {shown[k]: round(totals[k], 6) for k in ranked}


def sample_summary(index: int, record: dict, seed: int, temperature: float, answered: bool) -> dict:
    """What the record keeps of one sample."""
    subgraphs = record.get("subgraphs") or []
    return {"sample": index, "seed": seed, "temperature": temperature, "pattern_raw": record.get("pattern_raw"),
            "pattern_triples": record.get("pattern_triples"), "pattern_ok": record.get("pattern_ok"),
            "pattern_error": record.get("pattern_error"), "gsd": subgraphs[0].get("gsd") if subgraphs else None,
            "retrieval_hit": record.get("retrieval_hit"), "answer_raw": record.get("answer_raw"),
            "answers": sample_answers(record, answered), "weight": round(sample_weight(record, answered), 6)}


def _sum_tokens(records: Sequence[dict]) -> dict:
    out: dict = {}
    for rec in records:
        for k, v in (rec.get("tokens") or {}).items():
            if isinstance(v, bool):
                out[k] = out.get(k, True) and v  # cached only when every sample's call was
            elif isinstance(v, (int, float)):
                out[k] = out.get(k, 0) + v
    return out


def merge_samples(records: Sequence[dict], seeds: Sequence[int], temperatures: Sequence[float],
                  answered: bool = True) -> dict:
    """One question's record from its samples' records (see the module docstring)."""
    answers, rep, totals = vote(records, answered)
    merged = dict(records[rep])
    merged["samples"] = [sample_summary(i, r, s, t, answered) for i, (r, s, t) in enumerate(zip(records, seeds, temperatures))]
    merged["sample_representative"] = rep
    merged["sample_votes"] = totals
    merged["tokens"] = _sum_tokens(records)
    timings = dict(merged.get("timings") or {})
    for key in ("pattern_s", "answer_s"):
        timings[key] = round(sum((r.get("timings") or {}).get(key, 0.0) for r in records), 4)
    merged["timings"] = timings
    if answered:
        merged["answers"] = answers
        merged["answer_raw"] = " | ".join(answers) if answers else merged.get("answer_raw")
    else:
        merged["top1_answer"] = answers[0] if answers else None
    return merged
