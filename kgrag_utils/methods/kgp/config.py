"""Every knob of KGP with its default, in one place (the notebook's parameters must equal these).

The defaults follow the paper where it is explicit (budget 30, branching factor 3, TF-IDF seeds,
multi-round traversal) and say so where this project had to choose (set size, passage rule,
seed count, similarity); `describe_choices()` spells the choices out for run records.
"""

from __future__ import annotations

from typing import Literal

from ...errors import ConfigError
from ..base import MethodConfig

__all__ = ["KGPConfig", "GRAPHS", "TRAVERSALS", "SPLIT_RULES", "SIMILARITIES", "MODES", "RANK_ORDERS", "DEFAULT_KS"]

GRAPHS = ("tfidf", "knn", "entity", "union", "none")
TRAVERSALS = ("llm", "nollm", "nograph", "tfidf", "knn")
SPLIT_RULES = ("auto", "paragraph", "sentences")
SIMILARITIES = ("tfidf", "embedding")
MODES = ("multi", "onehop")
RANK_ORDERS = ("visit", "path")
DEFAULT_KS = (1, 5, 10, 20, 30)


class KGPConfig(MethodConfig):
    """KGP's parameters. `replace(**changes)` validates a modified copy.

    Document sets: `set_passages` passages per question (its own documents plus seeded distractor
    documents from the corpus; 0 = own documents only), or the whole corpus. Passages: paragraphs,
    or windows of `window` sentences moved by `stride` ("auto": sentence windows when the corpus
    stores sentences, as HotpotQA's does, else paragraphs).
    Graph: `graph` constructor; `structural` adds document nodes (document -> its passages).
    Traversal: `traversal` is "llm" (KGP), "nollm" (the question is the query at every hop),
    "nograph" (LLM evidence, every unvisited passage is a candidate), or the flat baselines
    "tfidf" / "knn" (top `budget` passages for the question, no graph, no LLM).
    """

    dataset: str = "sample-passages"  # hotpotqa, musique (real copies), 2wiki, iirc (split "dev"), the generated sample-passages,
                                      # or fixture-iirc (a tiny fixture in IIRC's released format)
    split: str = "all"  # "all" for the HippoRAG samples; IIRC: train, dev or test
    limit: int = 4  # questions evaluated (a seeded sample); 0: all
    # document sets and passages
    split_rule: Literal["auto", "paragraph", "sentences"] = "auto"  # auto: sentence windows when the corpus stores sentences, else paragraphs
    window: int = 2
    stride: int = 2
    set_passages: int = 700  # own documents + seeded distractors up to this many passages (0: own only); the paper's sets averaged 715 (HotpotQA) and 748 (MuSiQue)
    whole_corpus: bool = False  # one graph over the whole corpus instead
    title_in_text: bool = True
    # graph constructors
    graph: Literal["tfidf", "knn", "entity", "union", "none"] = "entity"  # tfidf, knn, entity (offline TAGME stand-in), union
    #                                                      (TAGME) entities; ours is the offline stand-in
    structural: bool = False  # add document nodes (document -> its passages)
    n_keywords: int = 10
    keyword_max_df: float = 0.05
    keyword_titles: bool = True
    knn_k: int = 10
    entity_max_df: float = 0.05
    # traversal
    traversal: Literal["llm", "nollm", "nograph", "tfidf", "knn"] = "llm"  # llm (KGP), nollm, nograph, tfidf, knn
    mode: Literal["multi", "onehop"] = "multi"  # multi-round (paper) or onehop (reference code)
    budget: int = 30
    branching: int = 3
    n_seeds: int = 0  # 0: budget // (branching + 1), every seed expanded once within the budget
    similarity: Literal["tfidf", "embedding"] = "tfidf"  # how neighbours are ranked against the evidence: tfidf or embedding
    reseed: bool = True
    rank_order: Literal["visit", "path"] = "visit"
    # LLM (traversal agent and reader)
    evidence_max_new_tokens: int = 32
    path_passages: int = 3  # the last passages of the path shown to the agent
    demos: Literal["fixed", "nearest"] = "fixed"  # agent prompt: "fixed" (no example) or "nearest" (the nearest training questions)
    shots: int = 2  # nearest demos: training questions shown, one step of each one's evidence chain
    demo_pool: Literal["train", "crossfit", "ircot"] = "train"  # nearest demos from: "train" (the training split), "crossfit" (the other half of the evaluated questions) or "ircot" (IRCoT's annotated training questions)
    passage_chars: int = 200
    # reader (the paper gave ChatGPT all 30 passages; a 0.5B model on a CPU reads the first 10)
    reader: bool = True
    reader_passages: int = 10
    reader_passage_chars: int = 200
    reader_max_new_tokens: int = 16
    ks: tuple[int, ...] = DEFAULT_KS

    def _check(self) -> None:
        for name in ("window", "stride", "budget", "branching", "n_keywords", "knn_k", "path_passages",
                     "passage_chars", "reader_passages", "reader_passage_chars", "evidence_max_new_tokens",
                     "reader_max_new_tokens", "shots"):
            if int(getattr(self, name)) < 1:
                raise ConfigError(f"KGPConfig.{name} must be >= 1 (got {getattr(self, name)!r}).")
        if self.demo_pool != "train" and self.demos != "nearest":
            raise ConfigError(f"KGPConfig.demo_pool={self.demo_pool!r} chooses nearest demonstrations: set "
                              "demos='nearest' too, or leave demo_pool='train'.")
        if self.set_passages < 0 or self.n_seeds < 0:
            raise ConfigError("KGPConfig.set_passages and n_seeds must be >= 0 (0 = own documents only / automatic).")
        for name in ("keyword_max_df", "entity_max_df"):
            if not 0 < float(getattr(self, name)) <= 1:
                raise ConfigError(f"KGPConfig.{name} must be in (0, 1] (got {getattr(self, name)!r}).")
        if not self.ks or min(self.ks) < 1:
            raise ConfigError(f"KGPConfig.ks must be positive integers (got {self.ks!r}).")
        if self.traversal in ("llm", "nollm") and self.graph == "none":
            raise ConfigError("graph traversal needs a graph: set graph to tfidf/knn/entity/union, or traversal='nograph'.")

    @property
    def seeds_count(self) -> int:
        """Number of TF-IDF seed passages (n_seeds, or budget // (branching + 1))."""
        if self.n_seeds:
            return min(int(self.n_seeds), self.budget)
        return max(1, self.budget // (self.branching + 1))

    @property
    def uses_llm_traversal(self) -> bool:
        return self.traversal in ("llm", "nograph")

    @property
    def uses_graph(self) -> bool:
        return self.traversal in ("llm", "nollm")

    @property
    def needs_llm(self) -> bool:
        return self.uses_llm_traversal or self.reader

    def describe_choices(self) -> dict:
        """The decisions a reader of a result must know (stated in run records and benchmark JSON)."""
        return {
            "traversal": {"llm": "KGP: LLM writes the next evidence; neighbours ranked by similarity to it",
                          "nollm": "graph traversal with the question as the query at every hop",
                          "nograph": "LLM next evidence, every unvisited passage a candidate (no graph)",
                          "tfidf": "flat TF-IDF top-budget for the question (no graph, no LLM)",
                          "knn": "flat sentence-embedding top-budget for the question (no graph, no LLM)"}[self.traversal],
            "mode": ("multi-round BFS over reasoning paths (the paper's algorithm)" if self.mode == "multi"
                     else "one hop from each seed (the reference code)"),
            "budget": f"{self.budget} distinct passages (the paper counts 30 seed+neighbour paths)",
            "seeds": f"{self.seeds_count} TF-IDF seeds",
            "reseed": "when the queue empties before the budget, the next TF-IDF passages become new seeds" if self.reseed else "off",
        }
