"""Every knob of compact relation selection with its default, in one place.

The notebook's parameters cell must hold the same defaults (a test checks it). Choices this
project made where the paper is silent are stated here: the lift threshold is tuned on a
validation portion of the training split over `threshold_grid`; the gate is the widest named rule
whose validation precision reaches `gate_precision`; the compact cap keeps whole paths up to
`max_facts` facts; the baseline ranks the `top_k` facts of a pool of at most `baseline_pool` facts
within max(question hops, `baseline_hops`) hops of the topic (RoG's question subgraphs, which
SubgraphRAG ranks, are 2-hop neighbourhoods).
"""

from __future__ import annotations

from typing import Literal

from ...errors import ConfigError
from ..questions import KGQuestionConfig
from .stages.gate import GATES

__all__ = ["CompactConfig", "KNOWLEDGE_SOURCES", "CONTEXTS"]

KNOWLEDGE_SOURCES = ("auto", "rules", "lexicon", "knn", "hybrid")
CONTEXTS = ("compact", "topk", "both")


class CompactConfig(KGQuestionConfig):
    """Parameters of the method (and of its run). `replace(**changes)` returns a validated copy."""

    RENAMED = {"max_new_tokens": "reader_max_new_tokens"}

    dataset: str = "sample-movies-2hop"  # KG questions: sample-movies-{1,2,3}hop, metaqa-{1,2,3}hop, pq-{2,3}hop, webqsp, cwq
                                         # (fixture-webqsp / fixture-cwq: tiny fixtures in RoG's format); kinship: sample-kinship, clutrr
    limit: int = 8  # evaluated items (seeded sample); 0: all
    # relation knowledge
    knowledge: Literal["auto", "rules", "lexicon", "knn", "hybrid"] = "auto"  # auto (kinship: rules; human-written questions, e.g. webqsp/cwq: knn; else hybrid) | rules | lexicon | knn | hybrid
    #                                  WebQSP/CWQ (human-written), hybrid (lexicon + kNN vote) otherwise
    lift_threshold: float = 0.0      # 0 means: tuned on a validation part of the training split
    threshold_grid: tuple[float, ...] = (1.5, 2.0, 3.0, 5.0)  # the lift thresholds tried on validation
    min_pair_count: float = 2.0      # minimum expected (aligned) count of a kept word-relation pair
    align_iterations: int = 10       # EM iterations of the word-relation alignment
    knn_k: int = 10  # neighbours in the kNN vote
    validation_fraction: float = 0.2  # share of the training split held out to tune the threshold and the gate
    max_validation: int = 2000
    # chains, contexts and checks
    max_candidates: int = 5          # chain proposals the derivability check may try
    max_facts: int = 20              # compact cap (whole paths kept); 0: no cap
    rival_min_score: float = 0.2     # a rival chain needs this share of the support to count
    gate: str = "auto"               # auto: chosen on validation; or a rule name from compact.GATES
    gate_precision: float = 0.9  # the validation precision the chosen gate must reach
    top_k: int = 100                 # facts in the baseline ("topk") context
    baseline_pool: int = 3000        # neighbourhood facts ranked for the baseline
    baseline_hops: int = 2           # neighbourhood radius: max(question hops, this); RoG's subgraphs are 2-hop
    # what is evaluated: "answers" (derivation, checks, the reader) or "chains" (chain prediction against the gold
    # chains alone: no KG needed, no LLM; chain_eval.py), and where the knowledge learns from ("": the evaluated
    # dataset's training split; or another registered dataset's, e.g. webqsp-paths for cwq-paths)
    evaluation: Literal["answers", "chains"] = "answers"
    train_dataset: str = ""
    # the reader
    context: Literal["compact", "topk", "both"] = "both"  # compact | topk | both
    reader: bool = True              # False: derivation only, no LLM (prompt tokens counted when a counter is given)
    reader_max_new_tokens: int = 32  # token limit of the reader's answer
    batch_size: int = 8              # items per batch (records are written after each batch)

    def _check(self) -> None:
        if self.gate != "auto" and self.gate not in GATES:
            raise ConfigError(f"CompactConfig.gate must be 'auto' or one of {list(GATES)} (got {self.gate!r}).")
        if self.lift_threshold and self.lift_threshold < 1.0:
            raise ConfigError(f"CompactConfig.lift_threshold must be 0 (tune) or >= 1 (got {self.lift_threshold}).")
        if not self.threshold_grid or min(self.threshold_grid) < 1.0:
            raise ConfigError("CompactConfig.threshold_grid needs values >= 1.")
        if not 0.0 < self.validation_fraction < 1.0:
            raise ConfigError(f"CompactConfig.validation_fraction must be in (0, 1) (got {self.validation_fraction}).")
        for name in ("knn_k", "max_candidates", "top_k", "reader_max_new_tokens", "align_iterations", "batch_size"):
            if getattr(self, name) < 1:
                raise ConfigError(f"CompactConfig.{name} must be >= 1 (got {getattr(self, name)}).")
        if self.train_dataset:  # a registered name (a typo is refused naming the closest)
            from ...datasets.registry import get_spec

            get_spec(self.train_dataset)
        if self.max_facts < 0 or self.baseline_pool < 1 or self.baseline_hops < 1:
            raise ConfigError("CompactConfig: max_facts must be >= 0, baseline_pool and baseline_hops >= 1.")

    @property
    def needs_llm(self) -> bool:
        return self.reader and self.evaluation == "answers"

    def contexts(self) -> tuple[str, ...]:
        return ("compact", "topk") if self.context == "both" else (self.context,)
