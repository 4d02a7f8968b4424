"""The rerank call, and self-consistency for it (config `samples=n`): n replies per question, one vote over the facts.

With samples=1 (the default) every prompt gets one greedy reply, all prompts in one batched call.

With samples=n > 1, reply 0 is that greedy reply (so a greedy run's response cache answers it) and replies
1..n-1 are drawn at `sample_temperature` with seeds 1..n-1, so a rerun draws the same ones. A question's
replies are asked one after another, so llama.cpp's prefix cache holds its prompt and replies 1..n-1 cost
their decoding only (on a GPU backend this gives up batching across questions for the option).

The vote (fixed before any sampled run was scored): every candidate collects one vote per reply that chose
it; the chosen candidates are those named by more than half of the n replies ("majority"), by votes, ties
in the order the replies named them (reply 0 first). Where no candidate has a majority, the candidates with
the most votes ("plurality"), in the same order. A reply that does not parse names nothing and still
counts in n. The record keeps the greedy reply's fields (raw text, reasoning, parse status), the voted
positions, and every reply (`samples`).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace
from typing import Any, Sequence

from ..prompts import RERANK_SCHEMA
from .rerank import RerankChoice, map_rerank_answer

__all__ = ["RerankReply", "vote", "ask_rerank"]


@dataclass
class RerankReply:
    """One question's rerank: the choice (voted positions where samples > 1), its replies and LLM seconds."""

    choice: RerankChoice
    replies: list           # LLMResult per reply, reply 0 greedy
    seconds: float          # LLM wall seconds of this question (its share of the batch where samples = 1)
    samples: list[dict] | None = None  # samples > 1: per reply {seed, temperature, raw, status, positions, cached}
    votes: dict[int, int] | None = None
    rule: str | None = None            # samples > 1: "majority" | "plurality" | "none"

    @property
    def prompt_tokens(self) -> int:
        return sum(r.prompt_tokens for r in self.replies)

    @property
    def completion_tokens(self) -> int:
        return sum(r.completion_tokens for r in self.replies)

    def record(self) -> dict:
        """The fields a rerank record gets from the replies (the greedy reply's text and parse; the vote's choice)."""
        c, first = self.choice, self.replies[0]
        out = {"raw": first.text, "finish": first.finish_reason, "status": c.status, "reasoning": c.reasoning,
               "positions": c.positions, "n_items": c.n_items, "bad_ids": c.bad_ids, "duplicates": c.duplicates,
               "by_text": c.by_text, "cached": all(r.cached for r in self.replies)}
        if self.samples is not None:
            out.update({"samples": self.samples, "votes": {str(k): v for k, v in self.votes.items()}, "vote": self.rule})
        return out


def vote(picks: Sequence[Sequence[int]], n: int | None = None) -> tuple[list[int], dict[int, int], str]:
    """(chosen positions, votes per position, rule) over the replies' picks; n = the replies counted (default all)."""
    n = len(picks) if n is None else int(n)
    votes: dict[int, int] = {}
    for pick in picks:
        for p in dict.fromkeys(pick):  # a reply votes once per candidate
            votes[p] = votes.get(p, 0) + 1
    if not votes:
        return [], {}, "none"
    order = sorted(votes, key=lambda p: -votes[p])  # stable: ties keep the order the replies named them
    majority = [p for p in order if 2 * votes[p] > n]
    if majority:
        return majority, votes, "majority"
    top = votes[order[0]]
    return [p for p in order if votes[p] == top], votes, "plurality"


def ask_rerank(llm, prompts: dict[int, Any], sentences: dict[int, Sequence[str]], max_new_tokens: int,
               samples: int = 1, temperature: float = 0.7) -> dict[int, RerankReply]:
    """The rerank reply of each prompt (keys: the questions' positions in the chunk), parsed against its candidates."""
    todo = list(prompts)
    if not todo:
        return {}
    if samples <= 1:
        t0 = time.perf_counter()
        outs = llm.generate([prompts[i] for i in todo], max_new_tokens=max_new_tokens, schema=RERANK_SCHEMA)
        wall = (time.perf_counter() - t0) / len(todo)
        return {i: RerankReply(map_rerank_answer(r.text, sentences[i]), [r], wall) for i, r in zip(todo, outs)}
    out = {}
    for i in todo:
        t0 = time.perf_counter()
        replies = [llm.generate([prompts[i]], max_new_tokens=max_new_tokens, schema=RERANK_SCHEMA,
                                **({"temperature": temperature, "seed": s} if s else {}))[0] for s in range(samples)]
        wall = time.perf_counter() - t0
        choices = [map_rerank_answer(r.text, sentences[i]) for r in replies]
        positions, votes, rule = vote([c.positions for c in choices], samples)
        log = [{"seed": s, "temperature": temperature if s else 0.0, "raw": r.text, "status": c.status,
                "positions": c.positions, "cached": r.cached} for s, (r, c) in enumerate(zip(replies, choices))]
        out[i] = RerankReply(replace(choices[0], positions=positions), replies, wall, log, votes, rule)
    return out
