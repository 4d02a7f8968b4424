"""The knobs of vector retrieval + LLM rerank, in one place, with the published numbers they are compared to.

The notebook's `parameters` cell repeats these defaults as literals (a test checks they agree), the
benchmark script takes them as command-line defaults, and every run records `to_dict()`.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import model_validator

from ...errors import ConfigError
from ..base import MethodConfig

__all__ = ["VARIANTS", "ORACLE_VARIANTS", "VARIANT_LABELS", "KGQA_VARIANTS", "KGQA_VARIANT_LABELS", "RECALL_KS", "VectorRerankConfig", "MEASURED_NAIVE_MUSIQUE",
           "parse_variants"]

#: the named variants, cheapest first (rerank-filled is ours: it isolates the LLM's reordering of the
#: graph candidates from the naive padding; small models often choose fewer relations than asked)
VARIANTS = ("naive", "expand", "rerank", "rerank-padded", "rerank-filled")

#: asked by name only, never part of "all": a variant that reads the gold passages (the ceiling of any reranker over
#: the candidates, not a method)
ORACLE_VARIANTS = ("oracle-filled",)

VARIANT_LABELS = {
    "naive": "naive: dense passage search (no graph, no LLM)",
    "expand": "expand: seeds + sparse expansion, relations ranked by query similarity (no LLM)",
    "rerank": "rerank: seeds + expansion + one LLM rerank call (the method)",
    "rerank-padded": "rerank-padded: rerank topped up with naive passages (as the published evaluation did)",
    "rerank-filled": "rerank-filled: the LLM's choices, then its other candidates by similarity (graph only, no naive)",
    "oracle-filled": "oracle-filled: a perfect pick among the expand candidates, then the rest as rerank-filled "
                     "(reads the gold: the ceiling of any reranker; no LLM)",
}

#: naive MiniLM dense retrieval over the 1,890-passage MuSiQue corpus, 100 questions
#: (docs/METHODS.md#vector-rerank-measurements; benchmarks/results/vector_rerank_musique.json)
MEASURED_NAIVE_MUSIQUE = {"recall@2": 47.2, "recall@5": 62.2}

#: the variants of KG question datasets ("all" there means these three; see kgqa.py)
KGQA_VARIANTS = ("naive", "expand", "rerank")
KGQA_VARIANT_LABELS = {
    "naive": "naive: the facts nearest the question (dense fact search; no graph, no LLM)",
    "expand": "expand: seeds + expansion, facts ranked by query similarity (no LLM)",
    "rerank": "rerank: seeds + expansion + one LLM rerank call + one answer call over the chosen facts (the method)",
}

#: the cut-offs of passage recall (Recall@2 and @5, the paper's)
RECALL_KS = (2, 5)


def parse_variants(variants: str | list | tuple, kind: str = "passages") -> tuple[str, ...]:
    """["all"] (or "all"), names, or a comma string -> a tuple of known variant names in canonical order.

    kind="kgqa": "all" means naive, expand, rerank, and the passage-only variants are refused.
    """
    if isinstance(variants, str):
        variants = [v.strip() for v in variants.split(",") if v.strip()]
    names = [str(v).strip() for v in variants]
    known = KGQA_VARIANTS if kind == "kgqa" else VARIANTS + ORACLE_VARIANTS
    if names in ([], ["all"]):
        return tuple(v for v in known if v not in ORACLE_VARIANTS)
    unknown = [v for v in names if v not in known]
    if unknown:
        where = "on KG question datasets " if kind == "kgqa" else ""
        if kind == "kgqa" and all(v in VARIANTS + ORACLE_VARIANTS for v in unknown):
            raise ConfigError(f"variant(s) {unknown} rank passages: {where}use some of {list(known)}.")
        raise ConfigError(f"unknown variant(s) {unknown}: use ['all'] or some of {list(known)}.")
    return tuple(v for v in known if v in names)


class VectorRerankConfig(MethodConfig):
    """Every setting that changes a run's output (recorded with the run).

    entity_topk: entities kept per query entity; entity_min_score: cosine below which a hit is
    not a seed; relation_topk: relations retrieved for the whole question; degree: expansion
    steps (1 or 2) through the entity-relation incidence; candidate_cap: relations kept (by query
    similarity) for the prompt and for the expand variant; select_n: relations the LLM is asked
    to choose; final_k: passages returned per variant; variants: ["all"] or some of VARIANTS
    (KG questions: naive, expand, rerank); entity_extraction: "llm" (few-shot, falls back to
    lexical matching when it fails) or "lexical" (no LLM); the expand variant always uses lexical
    seeds so that it needs no LLM. answer_max_new_tokens: the answer call of KG question datasets
    (answers from the chosen facts; unused on passage datasets). pool_per_question: -1 indexes the
    whole corpus; n >= 0 indexes only the gold passages of the evaluated questions plus each one's
    top-n dense passages (for corpora whose triples must come from a slow CPU OpenIE step; recorded
    and labelled). fill_order: how the candidates' passages are ranked where no LLM choice ranks
    them (the expand variant, and rerank-filled after the LLM's choices): "passage", each by its own
    similarity to the question, or "relation", by the similarity of the candidate relation that
    reaches it (the relation ranking of the published construction). On MuSiQue's 100 questions
    "passage" lifts expand Recall@5 from 56.1 to 62.1 (docs/RESULTS.md#vector-rerank-fill).
    samples / sample_temperature: self-consistency for the rerank call, a vote over n replies (samples.py).
    candidate_titles: each candidate fact in the rerank prompt is followed by the title of the passage it was read
    from (passage datasets only): an OpenIE triple often loses who or what its passage is about.
    demos / shots / demo_pool: the rerank prompt's examples (demos.py); demo_pool="crossfit" takes nearest ones
    from the other fold of the evaluated questions, for a copy without a training split (docs/DEMONSTRATIONS.md);
    demo_pool="ircot" from IRCoT's annotated training questions of the benchmark (MuSiQue, HotpotQA, 2Wiki).
    """

    RENAMED = {"variant": "variants", "entity_max_tokens": "entity_max_new_tokens",
               "rerank_max_tokens": "rerank_max_new_tokens", "answer_max_tokens": "answer_max_new_tokens"}

    dataset: str = "sample-passages"  # passages: sample-passages (embedded default), musique, hotpotqa, 2wiki;
                                      # KG questions (answers from the reranked facts): sample-movies-{1,2,3}hop,
                                      # metaqa-{1,2,3}hop, pq-{2,3}hop
    vector_store: Literal["faiss", "milvus"] = "faiss"  # "faiss" or "milvus" (Milvus Lite file, or a server URI in milvus_uri)
    milvus_uri: str = ""             # "": cache/milvus/kgrag.db; or e.g. "http://localhost:19530"
    entity_topk: int = 5  # entities kept per query entity
    entity_min_score: float = 0.8  # cosine below which an entity hit is not a seed
    relation_topk: int = 10  # relations retrieved for the whole question
    degree: int = 1  # expansion steps (the method uses 1 or 2)
    candidate_cap: int = 40  # relations kept (by query similarity) for the prompt / the expand variant
    select_n: int = 5  # relations the LLM is asked to choose
    final_k: int = 5  # passages per variant
    variants: tuple[str, ...] = ("all",)  # ["all"] or some of naive, expand, rerank, rerank-padded, rerank-filled; "oracle-filled" (a perfect pick among the candidates, reading the gold: the rerank's ceiling) only when named
                                          # (KG questions: "all" means naive, expand, rerank)
    pool_per_question: int = -1  # -1: whole corpus; n of 0 or more: gold + top-n dense passages per question (OpenIE corpora)
    entity_extraction: Literal["llm", "lexical"] = "llm"  # "llm" (lexical fallback) or "lexical" (no LLM) for the rerank variants' seeds
    fill_order: Literal["passage", "relation"] = "passage"  # expand / rerank-filled: candidate passages by their own similarity, or "relation"
    demos: Literal["fixed", "nearest"] = "fixed"  # rerank prompt: "fixed" (one worked example) or "nearest" (+ the nearest training questions)
    shots: int = 2                   # nearest demos: training questions shown after the fixed example (nearest last)
    demo_pool: Literal["train", "crossfit", "ircot"] = "train"  # nearest demos from: "train" (the training split), "crossfit" (the other half of the evaluated questions) or "ircot" (IRCoT's annotated training questions)
    samples: int = 1                 # rerank replies per question: n > 1 adds n-1 sampled replies and a vote over their facts
    sample_temperature: float = 0.7  # samples > 1: temperature of the sampled replies (the first reply is greedy)
    candidate_titles: bool = False   # rerank prompt: each fact followed by the title of its passage (passage datasets, fixed example)
    entity_max_new_tokens: int = 64  # token limit of the entity-extraction call
    rerank_max_new_tokens: int = 128  # token limit of the rerank call
    answer_max_new_tokens: int = 48  # token limit of the answer call on KG question datasets
    batch_size: int = 8              # questions per batch (records are written after each batch)

    @model_validator(mode="before")
    @classmethod
    def _comma_variants(cls, data: Any) -> Any:
        """variants may be given as one comma string ("naive,expand")."""
        if isinstance(data, dict) and isinstance(data.get("variants"), str):
            data = {**data, "variants": tuple(v.strip() for v in data["variants"].split(",") if v.strip())}
        return data

    def _check(self) -> None:
        for name in ("entity_topk", "relation_topk", "candidate_cap", "select_n", "final_k", "answer_max_new_tokens",
                     "batch_size", "shots", "samples"):
            if getattr(self, name) < 1:
                raise ConfigError(f"VectorRerankConfig.{name} must be a positive int, got {getattr(self, name)!r}.")
        if self.demo_pool != "train" and self.demos != "nearest":
            raise ConfigError(f"VectorRerankConfig.demo_pool={self.demo_pool!r} chooses nearest demonstrations: "
                              "set demos='nearest' too, or leave demo_pool='train'.")
        if self.candidate_titles and self.demos != "fixed":
            raise ConfigError("VectorRerankConfig.candidate_titles=True shows passage titles, which the nearest "
                              "demonstrations do not carry: use demos='fixed' with it, or candidate_titles=False.")
        if not float(self.sample_temperature) > 0:
            raise ConfigError(f"VectorRerankConfig.sample_temperature must be > 0 (sampled replies), got {self.sample_temperature!r}.")
        if self.degree not in (0, 1, 2, 3):
            raise ConfigError(f"VectorRerankConfig.degree must be 0, 1, 2 or 3 (the method uses 1 or 2), got {self.degree!r}.")
        if self.pool_per_question < -1:
            raise ConfigError(f"VectorRerankConfig.pool_per_question must be -1 (whole corpus) or >= 0, "
                              f"got {self.pool_per_question!r}.")
        if not -1.0 <= float(self.entity_min_score) <= 1.0:
            raise ConfigError(f"VectorRerankConfig.entity_min_score is a cosine in [-1, 1], got {self.entity_min_score!r}.")
        names = [v for v in self.variants if v != "all"]
        unknown = [v for v in names if v not in VARIANTS + ORACLE_VARIANTS]
        if unknown or ("all" in self.variants and names):
            raise ConfigError(f"VectorRerankConfig.variants: unknown {unknown or self.variants}: use ['all'] or some of "
                              f"{list(VARIANTS + ORACLE_VARIANTS)}.")

    def run_key(self) -> dict:
        """to_dict() without the knobs added after the first runs, where they hold their defaults, so those runs keep
        their names and resume (the benchmarks' run keys start from this)."""
        out = self.to_dict()
        if self.demos == "fixed":
            out.pop("demos"), out.pop("shots")
        if self.demo_pool == "train":
            out.pop("demo_pool")
        if not self.candidate_titles:
            out.pop("candidate_titles")
        if not self.take:
            out.pop("take")
        return out

    def variants_for(self, kind: str = "passages") -> tuple[str, ...]:
        """The variants a run evaluates on a dataset of this kind ("passages" or "kgqa")."""
        return parse_variants(self.variants, kind)

    @property
    def needs_llm(self) -> bool:
        return any(v.startswith("rerank") for v in self.variants_for("passages"))
