"""Demonstrations chosen per question: the training items nearest to the question at hand.

A stage that shows worked examples can show the same fixed ones to every question (`demos="fixed"`,
the papers' way) or the `shots` training items whose questions are nearest to the question being
answered (`demos="nearest"`, as retrieval-augmented few-shot KBQA does). This module holds the
method-independent half: the pool of training items, their similarity texts embedded once by the
project's embedder (through its on-disk vector cache), and the nearest-neighbour choice. A method
turns the chosen items into its own prompt turns.

Rules the pool keeps:
* neighbours come only from a training split (`DemoPool.from_training` takes the dataset's own
  training split, and refuses to build a pool from the split being evaluated);
* the evaluated question itself is never a demonstration: an item with the same id, or with the same
  question text (MetaQA's dev and test files share some question strings), is skipped;
* the similarity text masks the question's entities (names in [brackets] and the topic entities):
  two questions of one template then sit close whatever entity they name. On templated benchmarks
  (MetaQA) this finds questions of the same template, which is exactly what nearest demonstrations
  exploit there;
* misspelt words of the question are respelt towards the pool's vocabulary before it is embedded
  (`spelling=True`, the default: kgrag_utils.spelling), so a typo does not move it off its template;
  only the similarity text is respelt;
* an item a demonstration cannot be written from (no gold chain, no supporting facts) is left out by
  the caller's `usable` test; a training split without any usable item is refused with the fix.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Callable, Sequence

import numpy as np

from .errors import ConfigError
from .spelling import Respeller

__all__ = ["DEMO_MODES", "DEMO_SPELLING", "Demo", "DemoPool", "similarity_text", "check_demo_mode"]

#: "fixed": the prompt file's examples, the same for every question; "nearest": the training items nearest to it
DEMO_MODES = ("fixed", "nearest")
#: respell a question's out-of-vocabulary words towards the pool's words before choosing (kgrag_utils.spelling)
DEMO_SPELLING = True

_BRACKETED = re.compile(r"\[[^\[\]]*\]")
_BLANK = "X"


def check_demo_mode(mode: str, stage: str = "demos") -> str:
    """`mode` when it is one of DEMO_MODES, else a one-line ConfigError naming them."""
    if mode not in DEMO_MODES:
        raise ConfigError(f"{stage} must be one of {DEMO_MODES}, got {mode!r}.")
    return mode


def similarity_text(question: str, entities: Sequence[str] = ()) -> str:
    """The question with its entities blanked: [bracketed] names and each topic entity become "X".

    Longer names are blanked first, so a name that holds another is blanked whole."""
    text = _BRACKETED.sub(_BLANK, question or "")
    for name in sorted({str(e) for e in entities if str(e).strip()}, key=len, reverse=True):
        text = re.sub(re.escape(name), _BLANK, text, flags=re.I)
        text = re.sub(re.escape(name.replace("_", " ")), _BLANK, text, flags=re.I)
    return re.sub(r"\s+", " ", text).strip()


def _item_text(item: Any) -> str:
    return similarity_text(getattr(item, "question", ""), getattr(item, "topic_entities", ()) or ())


def _item_id(item: Any) -> str:
    for attr in ("qid", "sid", "id"):
        value = getattr(item, attr, None)
        if value is not None:
            return str(value)
    raise ConfigError(f"a demonstration item needs an id (qid / sid / id), got {type(item).__name__}.")


@dataclass(frozen=True)
class Demo:
    """One chosen demonstration: the training item, its id and its cosine similarity to the question."""

    id: str
    score: float
    item: Any


class DemoPool:
    """Training items and their embedded similarity texts; `nearest(question)` picks the demonstrations.

    `embedder` is anything with `encode(list[str]) -> (n, d)` unit rows (the project's `Embedder`, whose
    vector cache makes a second build cost a cache read)."""

    def __init__(self, items: Sequence, embedder, *, split: str = "", dataset: str = "",
                 text_of: Callable[[Any], str] = _item_text, spelling: bool = DEMO_SPELLING):
        self.items = list(items)
        if not self.items:
            raise ConfigError(f"demos='nearest': no training item to choose demonstrations from ({dataset or 'dataset'}"
                              f" {split or ''}); use demos='fixed'.")
        self.embedder = embedder
        self.split, self.dataset = split, dataset
        self.source = None  # the training Dataset the items come from (set by from_training)
        self._text_of = text_of
        self.ids = [_item_id(it) for it in self.items]
        self.texts = [text_of(it) for it in self.items]
        self._questions = [str(getattr(it, "question", "")).strip().casefold() for it in self.items]
        self.vectors = np.asarray(embedder.encode(self.texts), dtype=np.float32)
        self.respell = Respeller(self.texts) if spelling else None

    def query_text(self, item: Any) -> str:
        """The text `item` is compared by: its similarity text, respelt towards the pool's words (`spelling`)."""
        text = self._text_of(item)
        return self.respell(text) if self.respell is not None else text

    @classmethod
    def from_training(cls, dataset, embedder, usable: Callable[[Any, Any], bool], need: str,
                      split: str | None = None, limit: int | None = None,
                      spelling: bool = DEMO_SPELLING) -> "DemoPool":
        """The pool of `dataset`'s training split (its 'train', else 'dev': `datasets.training_dataset`).

        `usable(item, train)` says whether a demonstration can be written from an item of the training
        dataset `train`; `need` names what it needs, for the refusal when none can. `limit` keeps the first
        `limit` usable items (tests). The pool's `source` is the training dataset (its KG, its triples)."""
        from .datasets.registry import training_dataset

        try:
            train = training_dataset(dataset, split)
        except ConfigError:
            raise ConfigError(f"demos='nearest' needs a training split to choose demonstrations from, and "
                              f"{dataset.name!r} has none here (its questions are all evaluation questions): use "
                              "demos='fixed', or give the method a pool of training questions (kgrag_utils.demos.DemoPool)."
                              ) from None
        if train.split == getattr(dataset, "split", None):
            raise ConfigError(f"demos='nearest': {dataset.name!r} is evaluated on its training split {train.split!r}; "
                              "evaluate another split or use demos='fixed'.")
        items = [it for it in train.items if usable(it, train)]
        if not items:
            raise ConfigError(f"demos='nearest': the {train.split!r} split of {train.name!r} has no item with {need} "
                              f"({len(train.items)} items); use demos='fixed'.")
        pool = cls(items[:limit] if limit else items, embedder, split=train.split, dataset=train.name,
                   spelling=spelling)
        pool.source = train
        return pool

    def __len__(self) -> int:
        return len(self.items)

    def nearest(self, item: Any, k: int, exclude_ids: Sequence[str] = ()) -> list[Demo]:
        """The `k` pool items nearest to `item`'s question, nearest first (ties: pool order).

        Never `item` itself: pool items with its id, an id in `exclude_ids`, or its question text are skipped."""
        if k <= 0:
            return []
        query = np.asarray(self.embedder.encode([self.query_text(item)]), dtype=np.float32)[0]
        scores = self.vectors @ query
        banned = {str(x) for x in exclude_ids}
        own_id = getattr(item, "qid", None)
        if own_id is not None:
            banned.add(str(own_id))
        own_text = str(getattr(item, "question", "")).strip().casefold()
        order = np.argsort(-scores, kind="stable")
        out: list[Demo] = []
        for i in order:
            if self.ids[i] in banned or (own_text and self._questions[i] == own_text):
                continue
            out.append(Demo(self.ids[i], round(float(scores[i]), 4), self.items[i]))
            if len(out) == k:
                break
        return out
