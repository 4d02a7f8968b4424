"""Demonstrations chosen per question: the training items nearest to the question at hand.

A stage that shows worked examples can show the same fixed ones to every question (`demos="fixed"`,
the papers' way) or the `shots` training items whose questions are nearest to the question being
answered (`demos="nearest"`, as retrieval-augmented few-shot KBQA does). This module holds the
method-independent half: the pool of training items, their similarity texts embedded once by the
project's embedder (through its on-disk vector cache), and the nearest-neighbour choice. A method
turns the chosen items into its own prompt turns.

One knob name, one choice, three prompts: in every method `demos` chooses between the prompt's written
examples ("fixed") and the training questions nearest to each question ("nearest"), but what the written
part holds and what `shots` counts are each method's (docs/DEMONSTRATIONS.md, "Options, in one place"):
SimGRAG's "fixed" is the prompt file's `shots` pattern shots and "nearest" keeps `fixed_shots` of them, then
`shots` chosen ones ("" = the LLM preset's choice, `PRESET_DEMOS` in its config); vector rerank always keeps its
one worked example and "nearest" adds `shots` chosen ones; KGP's agent prompt has no written example, so
"fixed" shows none and "nearest" shows `shots` chosen ones. `shots` is read only where it counts.

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
  only the similarity text is respelt, and only towards the training questions as written (never towards
  a rephrasing's misspellings);
* `noise` (a SimGRAG run's `demo_pool_noise`; off by default) adds to the pool a rule-noise rewrite of each of its
  own TRAINING questions (`rephrasings`: kgrag_utils.datasets.paraphrase, the evaluated questions' noise seed plus
  `DEMO_POOL_NOISE_SEED_OFFSET`), with the gold chain of the question it rewrites, so a reworded question can
  find a demonstration of its own type worded as loosely. A rewrite keeps its training question's lineage: it is
  skipped wherever that question would be (its id, or its text, is the evaluated question's). A cross-fitted pool
  (the evaluated questions themselves) takes no rewrites: they would be evaluated questions;
* an item a demonstration cannot be written from (no gold chain, no supporting facts) is left out by
  the caller's `usable` test; a training split without any usable item is refused with the fix.

Where a data copy has no training split (the HippoRAG MuSiQue sample: its 100 questions are the evaluated
ones), `pool="crossfit"` (`DemoPool.cross_fitted`) is the labelled substitute: the evaluated questions are
cut into `CROSSFIT_FOLDS` folds by a hash of their ids, and a question's demonstrations come only from the
other folds. No question sees its own gold, but its demonstrations are other evaluated questions, so a
cross-fitted number is not a training-split number and every table names it. `pool="ircot"` takes them from
IRCoT's hand-annotated TRAINING questions of the same benchmark (`datasets.ircot`: about 20 for MuSiQue,
HotpotQA and 2Wiki, none of them evaluated here): real training demonstrations, but few.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from typing import Any, Callable, Sequence

import numpy as np

from .errors import ConfigError
from .spelling import Respeller

__all__ = ["DEMO_MODES", "DEMO_POOLS", "DEMO_SPELLING", "DEMO_POOL_NOISE", "DEMO_POOL_NOISES",
           "DEMO_POOL_NOISE_SEED_OFFSET", "rephrasings", "check_demo_pool_noise", "DEMO_TYPE_MARGIN", "CROSSFIT_FOLDS", "cover_types", "Demo", "DemoPool", "similarity_text",
           "check_demo_mode", "check_demo_pool", "crossfit_fold"]

#: "fixed": the prompt file's examples, the same for every question; "nearest": the training items nearest to it
DEMO_MODES = ("fixed", "nearest")
#: where nearest demonstrations come from: "train" (the dataset's training split), "crossfit" (the other
#: folds of the evaluated questions, for a copy without a training split; labelled wherever it is reported) or
#: "ircot" (IRCoT's annotated training questions of the same benchmark: datasets/ircot.py)
DEMO_POOLS = ("train", "crossfit", "ircot")
#: folds of a cross-fitted pool: two halves, each question's demonstrations from the other half
CROSSFIT_FOLDS = 2
#: respell a question's out-of-vocabulary words towards the pool's words before choosing (kgrag_utils.spelling)
DEMO_SPELLING = True
#: rule noise that also rewrites the pool's own training questions (`rephrasings`): "" (off, the default), one rule
#: noise kind or "rules" (all three), as `question_noise` names them
DEMO_POOL_NOISE = ""
DEMO_POOL_NOISES = ("", "synonym", "drop", "misspell", "rules")
#: the rewrites' seed is the evaluated questions' noise seed plus this: never the draw that rewrote the evaluated ones
DEMO_POOL_NOISE_SEED_OFFSET = 1000
#: type coverage (`nearest(..., cover=n)`, off at 1): the similarity gap under which the nearest demonstrations count
#: as ambiguous between types (the best item of another type is at most this far below the nearest item)
DEMO_TYPE_MARGIN = 0.05

_BRACKETED = re.compile(r"\[[^\[\]]*\]")
_BLANK = "X"


def check_demo_mode(mode: str, stage: str = "demos") -> str:
    """`mode` when it is one of DEMO_MODES, else a one-line ConfigError naming them."""
    if mode not in DEMO_MODES:
        raise ConfigError(f"{stage} must be one of {DEMO_MODES}, got {mode!r}.")
    return mode


def check_demo_pool(pool: str, stage: str = "demo_pool") -> str:
    """`pool` when it is one of DEMO_POOLS, else a one-line ConfigError naming them."""
    if pool not in DEMO_POOLS:
        raise ConfigError(f"{stage} must be one of {DEMO_POOLS}, got {pool!r}.")
    return pool


def check_demo_pool_noise(noise: str, stage: str = "demo_pool_noise") -> str:
    """`noise` when it is one of DEMO_POOL_NOISES, else a one-line ConfigError naming them."""
    if noise not in DEMO_POOL_NOISES:
        raise ConfigError(f"{stage} must be one of {DEMO_POOL_NOISES}, got {noise!r}.")
    return noise


def rephrasings(items: Sequence, noise: str, seed: int = 0) -> list:
    """Rule-noise rewrites of training `items` (KGQuestions), one per item the noise changes, in item order.

    `noise`: a rule noise kind or "rules" (all three); the rewrite is `paraphrase.noisy_questions`' at `seed` +
    DEMO_POOL_NOISE_SEED_OFFSET (`seed`: the evaluated questions' noise seed). A rewrite keeps its item's gold
    (chain, topic, answers, type); its id is `<item id>+<noise>@<seed used>` and `meta["demo_of"]` is the item's id,
    the lineage `DemoPool.nearest` excludes by. An item the noise leaves unchanged gives no rewrite (a copy adds
    nothing)."""
    import dataclasses

    from .datasets import paraphrase

    if not check_demo_pool_noise(noise):
        return []
    used = int(seed) + DEMO_POOL_NOISE_SEED_OFFSET
    kinds = paraphrase.NOISE_KINDS if noise == "rules" else (noise,)
    out = []
    for item, new in zip(items, paraphrase.noisy_questions(items, seed=used, kinds=kinds)):
        if new.question.strip().casefold() == str(item.question).strip().casefold():
            continue
        out.append(dataclasses.replace(new, qid=f"{_item_id(item)}+{noise}@{used}",
                                       meta={**new.meta, "demo_of": _item_id(item)}))
    return out


def crossfit_fold(item_id: str, folds: int = CROSSFIT_FOLDS) -> int:
    """The fold of an evaluated question in a cross-fitted pool: a hash of its id (stable across limits and runs)."""
    digest = hashlib.blake2b(str(item_id).encode(), digest_size=8).digest()
    return int.from_bytes(digest, "little") % int(folds)


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
                 text_of: Callable[[Any], str] = _item_text, spelling: bool = DEMO_SPELLING, folds: int = 0,
                 noise: str = DEMO_POOL_NOISE, seed: int = 0):
        originals = list(items)
        if not originals:
            raise ConfigError(f"demos='nearest': no training item to choose demonstrations from ({dataset or 'dataset'}"
                              f" {split or ''}); use demos='fixed'.")
        if check_demo_pool_noise(noise) and int(folds) > 1:
            raise ConfigError(f"demo_pool_noise={noise!r} rewrites the pool's training questions, and a cross-fitted "
                              "pool holds the evaluated questions: use demo_pool_noise='' with demo_pool='crossfit'.")
        self.noise = noise
        self.items = originals + rephrasings(originals, noise, seed)  # the training items, then their rewrites
        self.rephrased = len(self.items) - len(originals)
        self.embedder = embedder
        self.split, self.dataset = split, dataset
        self.source = None  # the Dataset the items come from (set by from_training / cross_fitted)
        self.folds = int(folds)  # > 1: cross-fitted, a question's demonstrations come from the other folds only
        self._text_of = text_of
        self.ids = [_item_id(it) for it in self.items]
        # lineage: a rewrite stands for the training item it rewrites (its id and question text)
        self.origins = [str((getattr(it, "meta", None) or {}).get("demo_of", i)) for it, i in zip(self.items, self.ids)]
        self.item_folds = [crossfit_fold(i, self.folds) for i in self.ids] if self.folds > 1 else None
        self.texts = [text_of(it) for it in self.items]
        self._questions = [str(getattr(it, "question", "")).strip().casefold() for it in self.items]
        first = {i: q for i, q in zip(self.ids[:len(originals)], self._questions)}
        self._origin_questions = [first.get(o, q) for o, q in zip(self.origins, self._questions)]
        self.vectors = np.asarray(embedder.encode(self.texts), dtype=np.float32)
        self.respell = Respeller(self.texts[:len(originals)]) if spelling else None

    def query_text(self, item: Any) -> str:
        """The text `item` is compared by: its similarity text, respelt towards the pool's words (`spelling`)."""
        text = self._text_of(item)
        return self.respell(text) if self.respell is not None else text

    def respelt(self, item: Any) -> bool:
        """Whether the respelling (`spelling`) changed the text `item` is compared by."""
        return self.respell is not None and self.query_text(item) != self._text_of(item)

    @classmethod
    def from_training(cls, dataset, embedder, usable: Callable[[Any, Any], bool], need: str,
                      split: str | None = None, limit: int | None = None,
                      spelling: bool = DEMO_SPELLING, noise: str = DEMO_POOL_NOISE, seed: int = 0) -> "DemoPool":
        """The pool of `dataset`'s training split (its 'train', else 'dev': `datasets.training_dataset`).

        `usable(item, train)` says whether a demonstration can be written from an item of the training
        dataset `train`; `need` names what it needs, for the refusal when none can. `limit` keeps the first
        `limit` usable items (tests). The pool's `source` is the training dataset (its KG, its triples). `noise`
        adds rule-noise rewrites of those training items (`rephrasings`, at the evaluated questions' noise `seed`
        plus DEMO_POOL_NOISE_SEED_OFFSET)."""
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
        return cls.of_training(train, embedder, usable, need, limit=limit, spelling=spelling, noise=noise, seed=seed)

    @classmethod
    def of_training(cls, train, embedder, usable: Callable[[Any, Any], bool], need: str, limit: int | None = None,
                    spelling: bool = DEMO_SPELLING, noise: str = DEMO_POOL_NOISE, seed: int = 0) -> "DemoPool":
        """The pool of the usable items of a loaded training dataset `train` (refused when none is usable), with
        their rewrites where `noise` asks for them (`rephrasings`)."""
        items = [it for it in train.items if usable(it, train)]
        if not items:
            raise ConfigError(f"demos='nearest': the {train.split!r} split of {train.name!r} has no item with {need} "
                              f"({len(train.items)} items); use demos='fixed'.")
        pool = cls(items[:limit] if limit else items, embedder, split=train.split, dataset=train.name,
                   spelling=spelling, noise=noise, seed=seed)
        pool.source = train
        return pool

    @classmethod
    def from_ircot(cls, dataset, embedder, usable: Callable[[Any, Any], bool], need: str,
                   spelling: bool = DEMO_SPELLING) -> "DemoPool":
        """IRCoT's annotated training questions of `dataset`'s benchmark (`datasets.ircot.POOL_FOR`) as the pool."""
        from .datasets.ircot import pool_dataset_name
        from .datasets.registry import load_dataset

        return cls.of_training(load_dataset(pool_dataset_name(dataset.name), split="train"), embedder, usable, need,
                               spelling=spelling)

    @classmethod
    def cross_fitted(cls, dataset, embedder, usable: Callable[[Any, Any], bool], need: str,
                     folds: int = CROSSFIT_FOLDS, spelling: bool = DEMO_SPELLING) -> "DemoPool":
        """The evaluated questions of `dataset` as their own pool, cut into `folds` folds (`crossfit_fold`).

        For a data copy without a training split: `nearest` then takes a question's demonstrations from the
        other folds only. `usable(item, dataset)` and `need` as in `from_training`."""
        if int(folds) < 2:
            raise ConfigError(f"a cross-fitted demonstration pool needs at least 2 folds, got {folds!r}.")
        items = [it for it in dataset.items if usable(it, dataset)]
        if not items:
            raise ConfigError(f"demos='nearest', demo_pool='crossfit': no evaluated question of {dataset.name!r} has "
                              f"{need} ({len(dataset.items)} questions); use demos='fixed'.")
        pool = cls(items, embedder, split=getattr(dataset, "split", ""), dataset=dataset.name, spelling=spelling,
                   folds=folds)
        pool.source = dataset
        return pool

    @classmethod
    def build(cls, dataset, embedder, usable: Callable[[Any, Any], bool], need: str, pool: str = "train",
              spelling: bool = DEMO_SPELLING) -> "DemoPool":
        """`from_training` (pool="train"), `cross_fitted` (pool="crossfit") or `from_ircot` (pool="ircot")."""
        if check_demo_pool(pool) == "crossfit":
            return cls.cross_fitted(dataset, embedder, usable, need, spelling=spelling)
        if pool == "ircot":
            return cls.from_ircot(dataset, embedder, usable, need, spelling=spelling)
        return cls.from_training(dataset, embedder, usable, need, spelling=spelling)

    def fold_of(self, item: Any) -> int | None:
        """`item`'s fold in a cross-fitted pool (None for a training-split pool)."""
        return crossfit_fold(_item_id(item), self.folds) if self.folds > 1 else None

    def __len__(self) -> int:
        return len(self.items)

    def nearest(self, item: Any, k: int, exclude_ids: Sequence[str] = (), type_of: Callable[[Any], Any] | None = None,
                cover: int = 1, margin: float = DEMO_TYPE_MARGIN) -> list[Demo]:
        """The `k` pool items nearest to `item`'s question, nearest first (ties: pool order).

        Never `item` itself: pool items with its id, an id in `exclude_ids`, or its question text are skipped, and
        so is a rewrite (`rephrasings`) of any such item; in a cross-fitted pool, every item of `item`'s own fold is skipped too. With `type_of` (a pool item's type,
        e.g. its question type or chain) and `cover` > 1, the choice guarantees `cover` types when the nearest are
        ambiguous (`cover_types`)."""
        if k <= 0:
            return []
        if type_of is not None and cover > 1:
            ranked = self.nearest(item, len(self.items), exclude_ids)
            return cover_types(ranked, k, [type_of(d.item) for d in ranked], cover, margin)
        query = np.asarray(self.embedder.encode([self.query_text(item)]), dtype=np.float32)[0]
        scores = self.vectors @ query
        banned = {str(x) for x in exclude_ids}
        own_id = getattr(item, "qid", None)
        if own_id is not None:
            banned.add(str(own_id))
        own_text = str(getattr(item, "question", "")).strip().casefold()
        own_fold = self.fold_of(item)
        order = np.argsort(-scores, kind="stable")
        out: list[Demo] = []
        for i in order:
            if self.ids[i] in banned or self.origins[i] in banned or \
                    (own_text and own_text in (self._questions[i], self._origin_questions[i])):
                continue
            if own_fold is not None and self.item_folds[i] == own_fold:
                continue
            out.append(Demo(self.ids[i], round(float(scores[i]), 4), self.items[i]))
            if len(out) == k:
                break
        return out


def cover_types(ranked: Sequence[Demo], k: int, types: Sequence[Any], cover: int = 2,
                margin: float = DEMO_TYPE_MARGIN) -> list[Demo]:
    """The first `k` of `ranked` (nearest first), unless they hold fewer than `cover` types while the nearest
    are ambiguous: then, for each missing type, the best-ranked item of a type not yet chosen replaces the farthest
    chosen item whose type is chosen more than once, as long as that item is within `margin` of the nearest item's
    similarity (the question's wording does not tell the types apart). Nearest first again.

    The pool's nearest neighbours share the question's template on templated data; a paraphrase can sit as close to
    another template's questions, and eight demonstrations of one wrong type then carry the error (issue 48)."""
    if cover < 2 or k < 2 or not ranked:
        return list(ranked[:k])
    chosen = list(range(min(k, len(ranked))))
    top = ranked[0].score
    for _ in range(cover - 1):
        have = [types[i] for i in chosen]
        if len(set(have)) >= cover:
            break
        other = next((i for i in range(len(ranked)) if i not in chosen and types[i] not in have), None)
        if other is None or ranked[other].score < top - margin:
            break  # no other type, or none close enough: the nearest are not ambiguous
        spare = [i for i in chosen if have.count(types[i]) > 1]
        if not spare:
            break
        chosen.remove(spare[-1])
        chosen.append(other)
    return [ranked[i] for i in sorted(chosen)]
