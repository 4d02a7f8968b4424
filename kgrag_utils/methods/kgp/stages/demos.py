"""KGP's nearest demonstrations: a training question, the passage its evidence chain starts from, and the next fact.

The traversal agent's prompt has no worked example of its own (`demos="fixed"` keeps it so). With
`demos="nearest"` it shows, after the instruction (the part every call shares) and before the task,
the `shots` training questions nearest to the question (`kgrag_utils.demos.DemoPool`), nearest last,
each as one finished step of its gold evidence chain: the first supporting passage as "passages found
so far", and as the next evidence needed the first sentence of the second supporting passage. A
training question needs two supporting passages with text; a training split without any (or a
dataset without a training split: the MuSiQue, HotpotQA and 2Wiki copies here) is refused. There,
demo_pool="ircot" takes IRCoT's annotated training questions of the benchmark (their gold paragraphs in the
order of the annotated reasoning steps: `datasets.ircot`).
"""

from __future__ import annotations

import re
from typing import Any

from ....demos import DemoPool
from ..prompts import clip

__all__ = ["agent_demo", "agent_demo_pool", "DEMO_NEED"]

DEMO_NEED = "two supporting passages with text (its gold evidence chain)"


def _support(item: Any) -> list:
    by_pid = {p.pid: p for p in getattr(item, "paragraphs", None) or []}
    return [by_pid[pid] for pid in getattr(item, "supporting", None) or [] if pid in by_pid and by_pid[pid].text.strip()]


def _usable(item: Any, train=None) -> bool:
    return len(_support(item)) >= 2


def _first_sentence(text: str, chars: int) -> str:
    first = re.split(r"(?<=[.!?])\s+", " ".join(str(text).split()), maxsplit=1)[0]
    return clip(first, chars)


def agent_demo(item: Any, chars: int = 200) -> dict:
    """{"id", "question", "passages": [(title, text)], "evidence"} of one training question."""
    first, second = _support(item)[:2]
    evidence = _first_sentence(second.text, chars)
    if second.title and second.title.casefold() not in evidence.casefold():
        evidence = f"{second.title}: {evidence}"
    return {"id": str(item.qid), "question": item.question, "passages": [(first.title, first.text)], "evidence": evidence}


def agent_demo_pool(dataset, embedder, pool: str = "train") -> DemoPool:
    """The questions with a two-passage gold evidence chain (refuses when none): `dataset`'s training split
    (pool="train"), its evaluated questions cut into folds (pool="crossfit", `DemoPool.cross_fitted`), or IRCoT's
    annotated training questions of its benchmark (pool="ircot", `DemoPool.from_ircot`)."""
    return DemoPool.build(dataset, embedder, _usable, DEMO_NEED, pool=pool)
