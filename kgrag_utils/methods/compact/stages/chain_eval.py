"""Chain prediction alone (config evaluation="chains"): how well relation knowledge names a question's relation
chain, scored against its gold chains, with no KG and no LLM.

It is what a dataset of questions with gold relation paths but without subgraphs allows (WebQSP and CWQ as RoG
annotated them: `datasets.rog_paths`, registered webqsp-paths and cwq-paths), and what the paper's "94.7% of
WebQSP test questions have a chain seen in training" measures. The knowledge (lexicon, knn or hybrid) learns
from a training split (`train_dataset`: another registered dataset's training split, e.g. WebQSP's for CWQ, which
has none); the lexicon's lift threshold is chosen on a seeded validation part of it by the top chain's hit rate
(there is no KG to run the derivability check on), and the knowledge is refit on the whole split.

RoG's gold paths have no step directions, so chains compare by their relation sequence (`rog_paths.relation_path`).
Per question (with at least one gold chain), with the proposals in the knowledge's order:

* exact chain: the top proposal is the question's first gold chain (its `chain`: RoG's first path);
* any-gold-chain hit: the top proposal is one of its gold chains (compact's `chain_correct`);
* hit in the candidates: one of the first `max_candidates` proposals is (what the derivability check may try);
* coverage: the knowledge proposes a chain at all;
* gold chain seen: one of its gold chains is among the gold chains of the training questions (the paper's 94.7%;
  the same for every knowledge).

Where the dataset has per-question KGs (the 18 whole WebQSP subgraphs), the derivability check runs too: the first
of the candidates that reaches an entity from a topic entity (each step walked in either direction, since the
knowledge learnt undirected chains), whether the entities it reaches include a gold answer ("check right").
"""

from __future__ import annotations

from typing import Mapping, Sequence

import numpy as np

from ....datasets.rog_paths import relation_path
from ....errors import ConfigError
from ...summary import SummaryHooks
from ...summary import summarize as shared_summarize
from .fit import auto_knowledge, fit_kgqa_knowledge, gold_chains
from .graphs import QuestionKGs
from .knowledge import RelationKnowledge, format_chain
from .splits import split_validation

__all__ = ["CHAIN_METRICS", "CHAIN_VARIANT", "CHAIN_HOOKS", "summarize_chains", "training_items",
           "fit_chain_knowledge", "chain_records", "chain_summary", "reach_undirected", "evaluate_chains",
           "training_paths"]

#: the per-question scores of a chain evaluation (record["scores"][CHAIN_VARIANT]); None where a question has no gold chain
CHAIN_METRICS = ("exact_chain", "any_gold_hit", "hit_in_candidates", "coverage", "gold_chain_seen")


#: the variant of a chain evaluation's score rows, and each metric's definition
CHAIN_VARIANT = "chain prediction (no KG, no LLM)"
_DEFINITIONS = {
    "exact_chain": "share of the questions with a gold chain whose top proposed chain is their first gold chain "
                   "(relation sequence)",
    "any_gold_hit": "share of the questions with a gold chain whose top proposed chain is one of their gold chains",
    "hit_in_candidates": "share of the questions with a gold chain with one of their gold chains among the first "
                         "max_candidates proposals",
    "coverage": "share of the questions with a gold chain for which the knowledge proposes a chain",
    "gold_chain_seen": "share of the questions with a gold chain with one of their gold chains among the training "
                       "questions' gold chains",
}


def training_items(config, dataset) -> tuple[list, str]:
    """(training questions with a gold chain, "name split") the knowledge learns from: `config.train_dataset`'s
    training split, or the evaluated dataset's own."""
    from ....datasets.registry import load_dataset, training_dataset
    from .splits import training_split

    if config.train_dataset:
        train = load_dataset(config.train_dataset, split=training_split(config.train_dataset))
    else:
        train = training_dataset(dataset)
    if train.name == dataset.name and train.split == dataset.split:
        raise ConfigError(f"evaluation='chains': {dataset.name!r} {dataset.split!r} is its own training split; "
                          "evaluate another split or name another train_dataset.")
    items = [q for q in train.items if getattr(q, "chain", None)]
    if not items:
        raise ConfigError(f"evaluation='chains': {train.name!r} {train.split!r} has no question with a gold chain.")
    return items, f"{train.name} {train.split}"


def _paths(chains) -> set[tuple[str, ...]]:
    return {relation_path(c) for c in chains}


def training_paths(items: Sequence) -> set[tuple[str, ...]]:
    """Every gold chain of every training question, as relation paths (what "a gold chain seen in training" means,
    whatever the knowledge keeps of them: the lexicon keeps one chain a question, the vote all)."""
    return {p for q in items for p in _paths(gold_chains(q))}


def _top_hit(knowledge: RelationKnowledge, items: Sequence) -> float:
    props = knowledge.propose_many(items)
    hits = [bool(p) and relation_path(p[0].chain) in _paths(gold_chains(q)) for q, p in zip(items, props)]
    return float(np.mean(hits)) if hits else float("nan")


def fit_chain_knowledge(config, name: str, items: Sequence, embedder=None) -> tuple[RelationKnowledge, dict]:
    """The knowledge fit on `items`; for lexicon / hybrid the lift threshold with the best validation top-chain hit
    rate (ties: the higher), then refit on all items. Returns (knowledge, tuning)."""
    if name not in ("lexicon", "knn", "hybrid"):
        raise ConfigError(f"evaluation='chains' scores learnt relation knowledge: knowledge must be lexicon, knn or "
                          f"hybrid (got {name!r}).")
    tuning: dict = {"n_train": len(items)}
    threshold = config.lift_threshold
    if name in ("lexicon", "hybrid") and not threshold:
        fit, val = split_validation(items, config.validation_fraction, config.seed, config.max_validation)
        table = []
        for th in sorted(set(float(x) for x in config.threshold_grid)):
            knowledge = fit_kgqa_knowledge(name, config.replace(lift_threshold=th), fit, embedder)
            table.append({"threshold": th, "n_validation": len(val), "top_chain_hit": _top_hit(knowledge, val)})
        threshold = max(table, key=lambda r: (np.nan_to_num(r["top_chain_hit"], nan=-1.0), r["threshold"]))["threshold"]
        tuning.update({"threshold": threshold, "threshold_source": "validation", "threshold_table": table})
    knowledge = fit_kgqa_knowledge(name, config.replace(lift_threshold=threshold or 0.0), items, embedder)
    return knowledge, tuning


def reach_undirected(kg, topics: Sequence[str], rels: Sequence[str], exclude_start: bool = True) -> np.ndarray:
    """Entity ids reached from the topic entities along the relation sequence, each step in either direction."""
    names = {str(n): i for i, n in enumerate(kg.relation_names)}
    frontier = np.unique([kg.entity_id(t) for t in topics if kg.has_entity(t)]).astype(np.int64)
    start = frontier
    for rel in rels:
        if rel not in names or frontier.size == 0:
            return np.zeros(0, dtype=np.int64)
        on = kg.rels == names[rel]
        fwd = on & np.isin(kg.heads, frontier)
        bwd = on & np.isin(kg.tails, frontier)
        frontier = np.unique(np.concatenate([kg.tails[fwd], kg.heads[bwd]])).astype(np.int64)
    return frontier[~np.isin(frontier, start)] if exclude_start else frontier


def _check(kg, q, candidates) -> dict:
    for rank, prop in enumerate(candidates):
        reached = reach_undirected(kg, q.topic_entities, relation_path(prop.chain))
        if reached.size:
            names = {str(n) for n in kg.entity_names[reached]}
            return {"check_passes": True, "check_rank": rank, "check_chain": format_chain(prop.chain),
                    "check_right": bool(names & set(q.answers)), "n_reached": int(reached.size)}
    return {"check_passes": False, "check_right": False}


def chain_records(knowledge: RelationKnowledge, items: Sequence, max_candidates: int, kgs=None,
                  known: set[tuple[str, ...]] | None = None) -> list[dict]:
    """One record per question: its gold chains, the proposals, and `scores[CHAIN_VARIANT]` (CHAIN_METRICS, 0/1 or None).
    `kgs`: a `QuestionKGs` to run the derivability check on (None: no KG). `known`: the relation paths a gold chain
    counts as seen against (`training_paths`: every gold chain of every training question); default the
    knowledge's training chains."""
    known = _paths(knowledge.training_chains()) if known is None else known
    out = []
    for q, props in zip(items, knowledge.propose_many(items)):
        golds = _paths(gold_chains(q))
        top = relation_path(props[0].chain) if props else None
        cands = [relation_path(p.chain) for p in props[:max_candidates]]
        has = bool(golds)
        scores = {"exact_chain": (top == relation_path(q.chain)) if has else None,
                  "any_gold_hit": (top in golds) if has else None,
                  "hit_in_candidates": bool(golds & set(cands)) if has else None,
                  "coverage": bool(props) if has else None,
                  "gold_chain_seen": bool(golds & known) if has else None}
        rec = {"id": q.qid, "kind": "kgqa", "question": q.question, "topic_entities": list(q.topic_entities),
               "answers": list(q.answers), "hops": q.hops, "knowledge": knowledge.name,
               "gold_chains": sorted(" > ".join(g) for g in golds), "n_gold_chains": len(golds),
               "chain": " > ".join(top) if top else None, "chain_source": props[0].source if props else None,
               "proposals": [{"chain": " > ".join(c), "source": p.source, "score": round(float(p.score), 4)}
                             for c, p in zip(cands, props)],
               "scores": {CHAIN_VARIANT: {k: (None if v is None else float(v)) for k, v in scores.items()}}}
        if kgs is not None:
            rec.update(_check(kgs.kg_for(q), q, props[:max_candidates]))
        out.append(rec)
    return out


def _rate(records: Sequence[Mapping], key: str) -> float:
    vals = [r["scores"][CHAIN_VARIANT][key] for r in records if r["scores"][CHAIN_VARIANT][key] is not None]
    return float(np.mean(vals)) if vals else float("nan")


def chain_summary(records: Sequence[Mapping]) -> dict:
    """Rates over the questions with a gold chain (n_with_gold), the unseen-only questions apart, and the check."""
    gold = [r for r in records if r["n_gold_chains"]]
    out: dict = {"evaluation": "chains", "n_with_gold": len(gold),
                 "n_without_gold": len(records) - len(gold)}
    out.update({k: _rate(gold, k) for k in CHAIN_METRICS})
    unseen = [r for r in gold if not r["scores"][CHAIN_VARIANT]["gold_chain_seen"]]
    out["n_unseen_only"] = len(unseen)
    out["any_gold_hit_unseen_only"] = _rate(unseen, "any_gold_hit") if unseen else float("nan")
    out["hit_in_candidates_unseen_only"] = _rate(unseen, "hit_in_candidates") if unseen else float("nan")
    if records and "check_passes" in records[0]:
        out["check_passes"] = float(np.mean([bool(r["check_passes"]) for r in records]))
        out["check_right"] = float(np.mean([bool(r["check_right"]) for r in records]))
        passing = [r for r in records if r["check_passes"]]
        out["check_precision"] = float(np.mean([bool(r["check_right"]) for r in passing])) if passing else float("nan")
        out["check_passes_unseen_only"] = sum(1 for r in unseen if r["check_passes"])
        out["check_right_unseen_only"] = sum(1 for r in unseen if r["check_right"])
    by_source: dict[str, int] = {}
    for r in records:
        by_source[str(r["chain_source"])] = by_source.get(str(r["chain_source"]), 0) + 1
    out["chain_source"] = dict(sorted(by_source.items()))
    return out


CHAIN_HOOKS = SummaryHooks(record_scores=lambda r: r.get("scores") or {}, extras=chain_summary,
                           uses_llm=lambda variant, records: False,
                           definitions={(CHAIN_VARIANT, m): d for m, d in _DEFINITIONS.items()})


def summarize_chains(records: Sequence[Mapping]) -> dict:
    """The run summary of a chain evaluation (the protocol's shared keys and score rows, `chain_summary`'s extras)."""
    return shared_summarize(records, "compact", CHAIN_HOOKS)


def evaluate_chains(config, dataset, recorder=None, embedder=None) -> tuple[list[dict], dict, RelationKnowledge]:
    """The whole chain evaluation of `dataset`'s items: fit (training_items, fit_chain_knowledge), record each
    question not yet in `recorder` (a RunRecorder: a resumed run keeps its records), summarise all of them.
    Returns (records, summary, knowledge); the summary holds the knowledge's tuning and what it learnt from."""
    if dataset.kind != "kgqa":
        raise ConfigError(f"evaluation='chains' scores relation chains of KG questions, not {dataset.kind!r} items.")
    items, source = training_items(config, dataset)
    name = auto_knowledge(dataset) if config.knowledge == "auto" else config.knowledge
    if name in ("knn", "hybrid") and embedder is None:
        from ....embeddings import load_embedder

        embedder = load_embedder(config.embedder)
    knowledge, tuning = fit_chain_knowledge(config, name, items, embedder)
    has_kg = getattr(dataset, "kg", None) is not None or hasattr(getattr(dataset, "triples", None), "kg")
    done = recorder.done_ids if recorder is not None else set()
    todo = [q for q in dataset.items if q.qid not in done]
    kgs, known = (QuestionKGs.of(dataset) if has_kg else None), training_paths(items)
    step, fresh = max(1, config.batch_size) * 64, []
    for start in range(0, len(todo), step):  # written batch by batch: an interrupted run resumes
        batch = chain_records(knowledge, todo[start:start + step], config.max_candidates, kgs, known)
        for rec in batch:
            if recorder is not None:
                recorder.add(rec)
        fresh.extend(batch)
    records = list(recorder.examples) if recorder is not None else fresh
    summary = {**summarize_chains(records), "knowledge": name, "trained_on": source, "tuning": tuning,
               "knowledge_details": knowledge.describe()}
    return records, summary, knowledge
