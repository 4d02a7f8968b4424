"""Fitting relation knowledge for `Compact.prepare`: the knowledge source a dataset calls for, the gold chains of a
training question, the lift threshold and the gate chosen on the held-out validation portion (splits.py)."""

from __future__ import annotations

from typing import Iterable, Sequence

from ....errors import ConfigError
from ..config import CompactConfig
from .checks import select_derivable
from .gate import GateChoice, choose_gate
from .graphs import QuestionKGs
from .hybrid import HybridKnowledge
from .knn import KNNVote
from .knowledge import Chain, RelationKnowledge, as_chain
from .lexicon import LiftLexicon

__all__ = ["auto_knowledge", "gold_chains", "tune_lift_threshold", "fit_kgqa_knowledge", "gate_from_validation",
           "topic_entity_ids", "training_data"]


def auto_knowledge(dataset) -> str:
    """The knowledge source knowledge="auto" means: rules (kinship), knn (human-written questions,
    `DatasetTraits.question_style == "human"`: WebQSP/CWQ; the paper's choice for free wording), hybrid (the
    rest: templated training questions, read by the lexicon where their wording is known and by the kNN vote
    where it is not, so paraphrased and noisy questions keep most of their accuracy; hybrid.py)."""
    if dataset.kind == "kinship":
        return "rules"
    return "knn" if dataset.traits.question_style == "human" else "hybrid"


def gold_chains(question) -> set[Chain]:
    """The gold chains of a question: every shortest topic-to-answer chain (RoG), else its chain."""
    many = (getattr(question, "meta", None) or {}).get("shortest_chains")
    if many:
        return {as_chain(c) for c in many}
    return {as_chain(question.chain)} if question.chain else set()


def tune_lift_threshold(lexicon: LiftLexicon, val_items: Sequence, kg, grid: Sequence[float],
                        max_candidates: int = 5, policy: str = "exclude_end") -> tuple[float, list[dict]]:
    """The threshold with the best validation chain accuracy after the derivability check.

    `kg` is one KG or a `QuestionKGs` (each question's KG is fetched once for all thresholds). A
    chain is right when it is one of the question's gold chains. Ties go to the higher threshold
    (the smaller lexicon). Returns (threshold, table of all).
    """
    grid = sorted(set(float(x) for x in grid))
    proposals, n_pairs = {}, {}
    for th in grid:
        lexicon.set_threshold(th)
        proposals[th] = lexicon.propose_many(val_items)
        n_pairs[th] = len(lexicon.pairs())
    kg_for = kg.kg_for if isinstance(kg, QuestionKGs) else (lambda item: kg)
    right = {th: 0 for th in grid}
    for i, q in enumerate(val_items):
        qkg = kg_for(q)
        topics = topic_entity_ids(qkg, q.topic_entities)[0]
        gold = gold_chains(q)
        for th in grid:
            sel = select_derivable(qkg, topics, proposals[th][i], max_candidates, policy)
            right[th] += int(sel.derivable and sel.proposal.chain in gold)
    table = [{"threshold": th, "n_validation": len(val_items), "n_pairs": n_pairs[th],
              "chain_accuracy": right[th] / len(val_items) if val_items else float("nan")} for th in grid]
    best = max(table, key=lambda r: (r["chain_accuracy"], r["threshold"]))
    lexicon.set_threshold(best["threshold"])
    return best["threshold"], table


def topic_entity_ids(kg, names: Iterable[str]) -> tuple[list[int], list[str]]:
    """(ids of the names the KG holds, the names it lacks). The reconstructed MetaQA KB lacks some topics:
    they are tested, not raised, so no close-match search runs for an error nobody reads (0.7 s a name on 43k names)."""
    ids, missing = [], []
    for name in names:
        if kg.has_entity(name):
            ids.append(int(kg.entity_id(name)))
        else:
            missing.append(name)
    return ids, missing


def training_data(dataset, train, source: QuestionKGs | None = None) -> tuple[list, QuestionKGs | None]:
    """(training items, where their KGs come from). The training split is loaded by name unless given;
    with per-question subgraphs it must be a Dataset (its items' subgraphs live in it)."""
    from ....datasets.registry import training_dataset

    if train is None:  # the same registered dataset and options (a file dataset: its training cut or file)
        train = training_dataset(dataset)
    items = list(train.items if hasattr(train, "items") else train)
    if source is None or not source.per_question:
        return items, source
    if not hasattr(train, "items"):
        raise ConfigError(f"{dataset.name!r} has per-question subgraphs: pass train= as a Dataset "
                          "(load_dataset(name, split='train')), not a list of items.")
    return items, QuestionKGs.of(train)


def fit_kgqa_knowledge(name: str, config: CompactConfig, items: Sequence, embedder=None) -> RelationKnowledge:
    if name == "lexicon":
        return LiftLexicon(threshold=config.lift_threshold or max(config.threshold_grid), min_count=config.min_pair_count,
                           iterations=config.align_iterations).fit(items)
    if name == "hybrid":
        return HybridKnowledge(embedder, threshold=config.lift_threshold or max(config.threshold_grid),
                               min_count=config.min_pair_count, iterations=config.align_iterations,
                               k=config.knn_k).fit(items)
    return KNNVote(embedder, k=config.knn_k).fit(items)


def gate_from_validation(val_records: Sequence[dict], config: CompactConfig) -> GateChoice:
    """The gate chosen on validation ('auto'), or the named gate with its validation precision/coverage."""
    if config.gate == "auto":
        return choose_gate(val_records, config.gate_precision)
    table = choose_gate(val_records, config.gate_precision).table if val_records else ()
    row = next((r for r in table if r["gate"] == config.gate), {})
    return GateChoice(config.gate, row.get("precision", float("nan")), row.get("coverage", float("nan")),
                      config.gate_precision, len(val_records), table)
