"""Vector rerank's nearest demonstrations: a training question, a short fact list and the ids of its gold facts.

With `demos="nearest"` the rerank prompt keeps its fixed worked example first (the part every question
shares) and adds the `shots` training questions nearest to the question (`kgrag_utils.demos.DemoPool`),
nearest last, each as a finished rerank task:

* on a KG question dataset the gold facts are one path of the question's gold relation chain from its
  topic entity to a gold answer in the training split's KG, the other facts are facts around that path
  (written "head relation tail", as the index writes KG edges);
* on a passage dataset the gold facts are, per supporting passage, its released (OpenIE) triple that
  shares most words with the question and its answer; the other facts come the same way from the
  question's non-supporting paragraphs. A training split without released triples, or without
  supporting passages, cannot give demonstrations, and the option refuses.

`demo_pool="crossfit"` takes the demonstrations from the other fold of the evaluated questions instead of a
training split (`DemoPool.cross_fitted`), labelled as such wherever it is reported. `demo_pool="ircot"` takes
them from IRCoT's annotated MuSiQue / HotpotQA / 2Wiki training questions (`datasets.ircot`), which have no
OpenIE triples: their gold facts are the annotation's reasoning sentences, one per hop ("CIMI-FM is licensed to
broadcast in Quebec City."), and the other facts the first sentence of each distractor paragraph, every fact
clipped to `DEMO_FACT_CHARS` characters.

The fact list is shuffled with a seed from the question id, so a rerun shows the same list.
"""

from __future__ import annotations

import hashlib
import re
from typing import Any, Sequence

import numpy as np

from ....demos import DemoPool
from .graph_index import relation_sentence

__all__ = ["rerank_demo_pool", "rerank_demo", "kg_rerank_demo", "passage_rerank_demo", "reasoning_rerank_demo",
           "DEMO_FACTS", "DEMO_FACT_CHARS"]

#: facts shown per demonstration (gold and other): short, since each costs prefill tokens on every question
DEMO_FACTS = 6
#: annotated demonstrations (IRCoT): each sentence shown as a fact is clipped to this many characters
DEMO_FACT_CHARS = 120

_WORD = re.compile(r"[a-z0-9]+")


def _words(text: str) -> set[str]:
    return set(_WORD.findall(str(text).lower()))


def _seeded(qid: str) -> np.random.Generator:
    return np.random.default_rng(int.from_bytes(hashlib.blake2b(str(qid).encode(), digest_size=8).digest(), "little"))


def _arrange(qid: str, gold: list[str], other: list[str], n_facts: int) -> dict:
    """Gold facts (in hop order) and others shuffled into one list; ids of the gold ones (1-based, hop order)."""
    other = [o for o in dict.fromkeys(other) if o not in gold][: max(0, n_facts - len(gold))]
    facts = gold + other
    order = _seeded(qid).permutation(len(facts))
    shown = [facts[i] for i in order]
    position = {int(i): k + 1 for k, i in enumerate(order)}
    return {"facts": shown, "ids": [position[i] for i in range(len(gold))]}


def _one_path(kg, topic: int, chain: Sequence, result) -> list[int] | None:
    """The edge ids of one complete path of the chain from `topic` (the first fact at each step)."""
    node, path = topic, []
    for (_, forward), step in zip(chain, result.step_edge_ids):
        step = np.asarray(step, dtype=np.int64)
        src = kg.heads[step] if forward else kg.tails[step]
        here = step[src == node]
        if not here.size:
            return None
        edge = int(here[0])
        path.append(edge)
        node = int(kg.tails[edge] if forward else kg.heads[edge])
    return path


def _edge_sentence(kg, edge: int) -> str:
    rel = str(kg.relation_names[int(kg.rels[edge])]).replace("_", " ")
    return relation_sentence(str(kg.entity_names[int(kg.heads[edge])]), rel, str(kg.entity_names[int(kg.tails[edge])]))


def kg_rerank_demo(item: Any, kg, n_facts: int = DEMO_FACTS) -> dict | None:
    """{"id", "question", "facts", "ids"} of a KG training question, or None when its chain finds no path in `kg`."""
    topic = str(item.topic_entities[0])
    if not kg.has_entity(topic):
        return None
    tid = kg.entity_id(topic)
    chain = list(item.chain)
    result = kg.follow_chain([tid], chain)
    path = _one_path(kg, tid, chain, result) if result.reached.size else None
    if not path:
        return None
    nodes = [tid] + [int(kg.tails[e]) if f else int(kg.heads[e]) for e, (_, f) in zip(path, chain)]
    other: list[str] = []
    for node in nodes[:-1]:  # facts around the path's entities, not on it
        edges = kg.neighbors(node, direction="both")[2]
        other.extend(_edge_sentence(kg, int(e)) for e in edges[:3] if int(e) not in path)
    gold = [_edge_sentence(kg, e) for e in path]
    return {"id": str(item.qid), "question": item.question, **_arrange(str(item.qid), gold, other, n_facts)}


def _best_triple(rows: Sequence[Sequence[str]], words: set[str]) -> str | None:
    best, score = None, -1
    for h, r, t in rows:
        s = len(_words(f"{h} {r} {t}") & words)
        if s > score:
            best, score = relation_sentence(h, r, t), s
    return best


def passage_rerank_demo(item: Any, triples: dict, n_facts: int = DEMO_FACTS) -> dict | None:
    """{"id", "question", "facts", "ids"} of a passage training question, or None without triples for its support."""
    words = _words(item.question) | _words(" ".join(item.answers[:1]))
    gold = [_best_triple(triples.get(pid) or [], words) for pid in item.supporting]
    if not gold or any(g is None for g in gold):
        return None
    support = set(item.supporting)
    other = [_best_triple(triples.get(p.pid) or [], words) for p in item.paragraphs if p.pid not in support]
    return {"id": str(item.qid), "question": item.question,
            **_arrange(str(item.qid), gold, [o for o in other if o], n_facts)}


def _clip(text: str, chars: int) -> str:
    text = " ".join(str(text).split())
    if len(text) <= chars:
        return text
    cut = text[:chars].rsplit(" ", 1)[0]
    return (cut or text[:chars]).rstrip(",;:") + " ..."


def _first_sentence(text: str) -> str:
    return re.split(r"(?<=[.!?])\s+", " ".join(str(text).split()), maxsplit=1)[0]


def reasoning_rerank_demo(item: Any, n_facts: int = DEMO_FACTS, chars: int = DEMO_FACT_CHARS) -> dict | None:
    """{"id", "question", "facts", "ids"} of an annotated training question (`meta["reasoning"]`, one sentence per
    hop): the reasoning sentences are the gold facts, the first sentences of its other paragraphs the rest."""
    reasoning = [s for s in (getattr(item, "meta", None) or {}).get("reasoning") or [] if str(s).strip()]
    if not reasoning:
        return None
    gold = [_clip(s, chars) for s in reasoning[:n_facts]]
    support = set(item.supporting)
    other = [_clip(_first_sentence(p.text), chars) for p in item.paragraphs if p.pid not in support and p.text.strip()]
    return {"id": str(item.qid), "question": item.question, **_arrange(str(item.qid), gold, other, n_facts)}


def rerank_demo(pool: DemoPool, item: Any, n_facts: int = DEMO_FACTS) -> dict | None:
    """The demonstration of one pool item, from the training split the pool was built from."""
    train = pool.source
    if getattr(train, "kind", None) == "kgqa":
        return kg_rerank_demo(item, train.kg, n_facts)
    if (getattr(item, "meta", None) or {}).get("reasoning"):  # annotated (IRCoT): its reasoning sentences
        return reasoning_rerank_demo(item, n_facts)
    return passage_rerank_demo(item, train.triples or {}, n_facts)


def _usable(item: Any, train) -> bool:
    if train.kind == "kgqa":
        return bool(getattr(item, "chain", None)) and bool(getattr(item, "topic_entities", None))
    if (getattr(item, "meta", None) or {}).get("reasoning"):
        return True
    triples = train.triples or {}
    return bool(item.supporting) and all(triples.get(pid) for pid in item.supporting)


def rerank_demo_pool(dataset, embedder, pool: str = "train") -> DemoPool:
    """The questions a rerank demonstration can be written from (refuses when none): `dataset`'s training
    split (pool="train"), its evaluated questions cut into folds (pool="crossfit"), or IRCoT's annotated
    training questions of its benchmark (pool="ircot")."""
    need = ("a gold relation chain and a topic entity" if dataset.kind == "kgqa"
            else "supporting passages with released (OpenIE) triples, or annotated reasoning sentences")
    return DemoPool.build(dataset, embedder, _usable, need, pool=pool)
