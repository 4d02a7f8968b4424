"""A KG relation's other names, mined from training questions: the phrases people use for it.

A method that compares a pattern's relation words with the KG's relation names by embedding (SimGRAG's GSD) loses
a question when the words a model writes ("appeared in") sit nearer another relation's name (`directed_by`) than
their own (`starred_actors`). The training questions say how a relation is asked about: in a question whose gold
chain is that single relation, the words around the topic entity are the relation's words. This module finds them;
the method decides what to do with them (SimGRAG: a relation's distance is the smallest over its name and its
aliases, config `relation_aliases`).

The rules (chosen by reading the aliases they give on MetaQA 1-hop's training questions, and fixed before any
retrieval was measured with them: docs/DEMONSTRATIONS.md, "Relation aliases, measured without an LLM"):
* only training questions with a single-relation gold chain and a topic entity count (`usable`); the evaluated
  split is refused (`training_items`);
* a question's text is lowercased with its topic entity (and any [bracketed] name) removed
  (`kgrag_utils.demos.similarity_text`), and cut into words; word n-grams of 1 to `ALIAS_MAX_N` words that do not
  cross the removed entity are counted once per question;
* an n-gram is an alias of relation r when at least `ALIAS_MIN_COUNT` questions hold it and at least
  `ALIAS_MIN_PRECISION` of them have r as their gold relation (whatever its direction);
* an n-gram made only of `STOPWORDS` (English function words) and generic words is never an alias (a word is
  generic when questions of at least `GENERIC_MIN_RELATIONS` relations use it: "film", "movie" on MetaQA), nor
  one that holds the relation's own name (the name is compared anyway);
* each relation keeps its `ALIAS_MAX_PER_RELATION` most frequent aliases (ties: fewer words, then alphabetical),
  skipping an n-gram that holds one already kept ("acted in" after "acted"): a variant adds a slot, not a word.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from typing import Any, Iterable, Sequence

from .demos import similarity_text
from .errors import ConfigError

__all__ = ["ALIAS_MAX_N", "ALIAS_MIN_COUNT", "ALIAS_MIN_PRECISION", "ALIAS_MAX_PER_RELATION", "STOPWORDS",
           "GENERIC_MIN_RELATIONS", "usable", "question_ngrams", "mine_aliases", "training_items", "aliases_for"]

ALIAS_MAX_N = 3  # the longest alias, in words
ALIAS_MIN_COUNT = 5  # training questions that must hold an n-gram
ALIAS_MIN_PRECISION = 0.9  # share of those whose gold relation is the alias's relation
ALIAS_MAX_PER_RELATION = 8  # aliases kept per relation, the most frequent
#: English function words: alone they say nothing about a relation (whatever a template's habits)
STOPWORDS = frozenset(
    "a an the of in on at by for to from with and or as is was are were be been being am did do does done has have had "
    "can could would should will shall may might must what which who whom whose when where why how that this those "
    "these it its they them their he she his her i you your we our me my some any there here about under over into "
    "out up down not no so than then just also very".split())
#: a word that questions of this many relations use is generic: it says nothing about one relation
GENERIC_MIN_RELATIONS = 3

_WORD = re.compile(r"[a-z0-9']+")
_BLANK = re.compile(r"\bX\b")  # what similarity_text puts where the topic entity was


def usable(item: Any) -> bool:
    """A training question whose gold chain is one relation, from a named topic entity."""
    chain = getattr(item, "chain", None)
    return bool(chain) and len(chain) == 1 and bool(getattr(item, "topic_entities", None))


def question_ngrams(question: str, topics: Sequence[str] = (), max_n: int = ALIAS_MAX_N) -> set[str]:
    """The word n-grams (1..max_n) of a question without its topic entity; none crosses where the entity was."""
    text = similarity_text(question, topics)
    out: set[str] = set()
    for segment in _BLANK.split(text):
        words = _WORD.findall(segment.lower())
        for n in range(1, max_n + 1):
            out.update(" ".join(words[i:i + n]) for i in range(len(words) - n + 1))
    return out


def mine_aliases(items: Iterable[Any], *, max_n: int = ALIAS_MAX_N, min_count: int = ALIAS_MIN_COUNT,
                 min_precision: float = ALIAS_MIN_PRECISION,
                 max_per_relation: int = ALIAS_MAX_PER_RELATION) -> dict[str, list[str]]:
    """{KG relation name: its aliases, most frequent first} from the `usable` items among `items` (the rules above)."""
    total: Counter = Counter()
    by_relation: dict[str, Counter] = defaultdict(Counter)
    for item in items:
        if not usable(item):
            continue
        relation = str(item.chain[0][0])
        grams = question_ngrams(item.question, item.topic_entities, max_n)
        total.update(grams)
        by_relation[relation].update(grams)
    spread = Counter(w for counts in by_relation.values() for w in counts if " " not in w)
    generic = STOPWORDS | {w for w, n in spread.items() if n >= GENERIC_MIN_RELATIONS}
    out = {}
    for relation, counts in sorted(by_relation.items()):
        own = relation.replace("_", " ").casefold()
        keep = [g for g, c in counts.items() if c >= min_count and c / total[g] >= min_precision
                and not _holds(g, own) and not set(g.split()) <= generic]
        keep.sort(key=lambda g: (-counts[g], len(g.split()), g))
        chosen: list[str] = []
        for g in keep:
            if len(chosen) < max_per_relation and not any(_holds(g, c) for c in chosen):
                chosen.append(g)
        if chosen:
            out[relation] = chosen
    return out


def _holds(gram: str, part: str) -> bool:
    """Whether `part`'s words appear, in order and adjacent, in `gram`'s."""
    return f" {part} " in f" {gram} "


def training_items(dataset, source: str) -> list:
    """The training questions aliases are mined from: `source` "train" is the evaluated dataset's own training split
    (`datasets.registry.training_dataset`), any other value the registered dataset of that name's training split
    (its 'train', else 'dev'), e.g. MetaQA 1-hop's for MetaQA 2/3-hop, whose training questions have longer chains.
    The evaluated split itself is refused."""
    from .datasets.registry import get_spec, load_dataset, training_dataset

    if source == "train":
        train = training_dataset(dataset)  # refuses when the evaluated split is the training split
    else:
        spec = get_spec(source)
        split = next((s for s in ("train", "dev") if s in spec.splits), None)
        if split is None:
            raise ConfigError(f"relation_aliases={source!r}: that dataset has no train or dev split to mine.")
        evaluated = dataset.info.get("registered_name", dataset.name)
        if source == evaluated and split == getattr(dataset, "split", None):
            raise ConfigError(f"relation_aliases={source!r}: its training split {split!r} is the evaluated split; "
                              "evaluate another split or mine another dataset.")
        options = {"answerable": False} if "answerable" in spec.options else {}
        train = load_dataset(source, split=split, **options)
    return list(train.items)


def aliases_for(dataset, source: str, relation_names: Sequence[str]) -> dict[str, list[str]]:
    """The aliases of the KG's relations mined from `source`'s training questions (`training_items`, `mine_aliases`).

    Refused when the training split has no single-relation question, or when a mined relation is not one of the KG's
    (a dataset over another KG)."""
    items = training_items(dataset, source)
    if not any(usable(it) for it in items):
        raise ConfigError(f"relation_aliases={source!r}: its training questions have no single-relation gold chain "
                          "to mine; name a dataset over the same KG whose training questions have them (MetaQA 2/3-hop:"
                          " 'metaqa-1hop').")
    aliases = mine_aliases(items)
    foreign = sorted(set(aliases) - {str(r) for r in relation_names})
    if foreign:
        raise ConfigError(f"relation_aliases={source!r}: its questions' relations {foreign[:5]} are not this KG's; "
                          "mine a dataset over the same KG.")
    return aliases
