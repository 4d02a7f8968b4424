"""Vector retrieval + LLM rerank end to end, one record per question, four named variants.

Stages per question (timed): embed the question -> naive passage search -> query entities (LLM
with lexical fallback, or lexical) -> seeds (entity search per query entity, relation search for
the question) -> expansion (sparse, `degree` steps) -> cap by query similarity -> rerank (one LLM
call) -> passages of the chosen relations, in order, deduplicated, top `final_k`.

Variants (each labelled in the records and summaries):
* naive          dense passage search only;
* expand         lexical seeds (no LLM) + expansion, the candidates' passages ranked by query similarity
                 (config fill_order: each passage's own, the default, or its relation's);
* rerank         the method: LLM entity seeds + expansion + LLM rerank; only the LLM's choices;
* rerank-padded  rerank topped up with naive passages up to final_k (the published evaluation);
* rerank-filled  the LLM's choices first, then the rest of its candidates' passages by query similarity
                 (fill_order, as expand; graph only): what the LLM's choice adds over the similarity ranking.

A rerank whose answer maps to no candidate is a failure: it keeps an empty passage list (recall
0), is counted in `n_failed`, and is never padded except in the named padded variant (which is then
the naive list; it is scored as such and its rows say `rerank_failed`).
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any, ClassVar, Sequence

from ...datasets.registry import dataset_traits
from ...errors import ConfigError
from ...metrics import CONTAINMENT, HITS1, recall_name
from ..base import Method
from ..scoring import Headline
from .config import VectorRerankConfig
from .prompts import rerank_prompt
from .record import VectorRerankRecord
from .stages.graph_index import GraphIndex
from .stages.query_entities import QueryEntities
from .stages.samples import RerankReply, ask_rerank
from .stages.steps import VectorRerankStages

if TYPE_CHECKING:  # pragma: no cover
    from ...llm import LLM

__all__ = ["VectorRerank", "gold_of"]


def gold_of(question, gold_key: str) -> list[str]:
    """Gold passage keys of a PassageQuestion: pids (title + text) or titles."""
    return list(question.supporting_titles if gold_key == "title" else question.supporting)


class VectorRerank(VectorRerankStages, Method):
    """The method over one GraphIndex: `VectorRerank(config, index, llm=None)`, or
    `VectorRerank.prepare(config, dataset)`, which builds the index (and, on a KG question dataset,
    returns the fact-level `FactRerank`). `run(questions)` gives one record per question.
    `llm=None`: the config's preset, loaded on first use by the rerank variants."""

    name = "vector_rerank"
    notebook = "03_vector_rerank.ipynb"
    config_class = VectorRerankConfig
    record_type = VectorRerankRecord
    headline = Headline(((HITS1, CONTAINMENT), (recall_name(5), recall_name(2))), variant="rerank")
    color = "#7570b3"
    label = "vector retrieval + LLM rerank"
    #: the class of each dataset kind (`Method.reader_for`: `prepare` picks FactRerank for KG questions)
    kinds = {"passages": "", "kgqa": "stages.kgqa:FactRerank"}
    #: the dataset kind this class reads (FactRerank: "kgqa")
    dataset_kind: ClassVar[str] = "passages"

    def __init__(self, config: VectorRerankConfig | None = None, index: GraphIndex | None = None,
                 llm: "LLM | None" = None, gold_key: str | None = None, *, corpus_info: dict | None = None,
                 demo_pool=None):
        if (config is not None and not isinstance(config, VectorRerankConfig)) or index is None:
            raise ConfigError("VectorRerank(config, index, llm=None): the config comes first and an index is needed "
                              "(VectorRerank.prepare(config, dataset) builds one; see docs/MIGRATION.md).")
        self.index = index
        self.config = config or VectorRerankConfig()
        self._llm = llm
        self.corpus_info: dict = dict(corpus_info or {})  # which corpus and triples the index holds (prepare)
        self.variants = self.config.variants_for("passages")
        self.demo_pool = demo_pool  # demos="nearest": the training questions (VectorRerank.prepare builds it)
        # how gold passages are matched: given (prepare: the dataset's trait), else the config's dataset's
        self.gold_key = gold_key or dataset_traits(self.config.dataset, kind="passages").gold_unit
        if self.gold_key not in ("pid", "title"):
            raise ConfigError(f"gold_key must be 'pid' or 'title', got {self.gold_key!r}.")

    @classmethod
    def prepare(cls, config: VectorRerankConfig, dataset, *, llm: "LLM | None" = None, embedder=None,
                progress: bool | None = None, openie_batch: int = 8, demo_pool=None) -> "VectorRerank":
        """Build the index for the dataset (passages: released triples or OpenIE; KG questions: the KG's facts)
        and the method that reads it: `FactRerank` on KG question datasets, `VectorRerank` on passages.

        demo_pool: demos="nearest"'s pool when the caller built it already (a benchmark builds it before loading the
        LLM, so that a refusal comes first); else it is built here."""
        from ...embeddings import load_embedder
        from .stages.corpus import build_index

        reader = cls.reader_for(dataset)  # the class of the dataset's kind (`kinds`)
        kgqa = dataset.kind == "kgqa"
        if kgqa and config.candidate_titles:
            raise ConfigError(f"candidate_titles=True shows the passage each fact was read from; {dataset.name!r} is "
                              "a KG question dataset, whose facts come from no passage: leave candidate_titles=False.")
        variants = config.variants_for(dataset.kind)
        needs_llm = "rerank" in variants if kgqa else (config.needs_llm or
                                                       (dataset.triples is None and variants != ("naive",)))
        if llm is None and needs_llm:
            llm = config.load_llm()
        emb = embedder if embedder is not None else load_embedder(config.embedder)
        index, info = build_index(config, dataset, emb, llm, progress=progress, openie_batch=openie_batch)
        if config.demos == "nearest" and any(v.startswith("rerank") for v in variants):  # rerank, -padded, -filled
            from .stages.demos import rerank_demo_pool

            demo_pool = demo_pool if demo_pool is not None else rerank_demo_pool(dataset, emb, pool=config.demo_pool)
        else:
            demo_pool = None
        return reader(config, index, llm, gold_key=dataset.traits.gold_unit, corpus_info={**info, **index.info},
                      demo_pool=demo_pool)

    def close(self) -> None:
        """Release the index (a Milvus collection holds a connection)."""
        self.index.close()

    def progress_label(self) -> str:
        return "vector-rerank"

    def error_fields(self) -> dict:
        return {"question": lambda q: q.question, "qtype": lambda q: q.qtype, "task": lambda q: "passages",
                "gold": lambda q: gold_of(q, self.gold_key), "gold_key": lambda q: self.gold_key}

    # ------------------------------------------------------------------ the run (Method.run: resume, isolation, progress)
    def _run_batch(self, questions: Sequence) -> list[dict]:
        return self._run_chunk(questions)

    def retrieve(self, question) -> dict:
        """One question's record (the notebook's worked example)."""
        return self._run_chunk([question])[0]

    def _run_chunk(self, chunk: Sequence) -> list[dict]:
        cfg = self.config
        variants = self.variants
        n = len(chunk)
        texts = [q.question for q in chunk]
        t0 = time.perf_counter()
        qvecs = self.index.encode(texts)
        t_embed = (time.perf_counter() - t0) / n
        t0 = time.perf_counter()
        naive_hits = self.index.search_passages(qvecs, cfg.final_k)
        t_naive = (time.perf_counter() - t0) / n
        wants_graph = any(v != "naive" for v in variants)
        wants_rerank = any(v.startswith("rerank") for v in variants)
        lex = [self.lexical(t) for t in texts] if wants_graph else [None] * n
        rerank_entities: list[QueryEntities | None] = [None] * n
        t_ent = 0.0
        if wants_rerank:
            if cfg.entity_extraction == "llm":
                t0 = time.perf_counter()
                rerank_entities = self.llm_entities(texts)
                t_ent = (time.perf_counter() - t0) / n
            else:
                rerank_entities = lex
        records: list[dict] = []
        prompts: list[list[dict] | None] = []
        for i, q in enumerate(chunk):
            gold = gold_of(q, self.gold_key)
            qvec = qvecs[i]
            naive_pos = [p for p, _ in naive_hits[i]]
            rec = {"id": q.qid, "question": q.question, "qtype": q.qtype, "gold": gold, "gold_key": self.gold_key,
                   "variants": {}, "timings": {"embed": t_embed, "naive": t_naive}, "tokens": {"prompt": 0, "completion": 0},
                   "graph": {}}
            if "naive" in variants:
                rec["variants"]["naive"] = self._score(naive_pos, gold)
            graph_cache: dict[tuple, dict] = {}
            for role, ents in (("expand", lex[i]), ("rerank", rerank_entities[i])):
                if ents is None or (role == "expand" and not {"expand", "oracle-filled"} & set(variants)):
                    continue
                g = self._graph_for(qvec, ents, graph_cache)
                rec["graph"][role] = self._graph_record(ents, g)
                rec["timings"][f"{role}_seeds"] = g["t_seeds"]
                rec["timings"][f"{role}_expand"] = g["t_expand"]
            if "expand" in variants:
                g = graph_cache[tuple(lex[i].names)]
                t0 = time.perf_counter()
                rec["variants"]["expand"] = self._score(self.ranked_passages(g["candidates"], qvec, cfg.final_k), gold)
                rec["timings"]["expand_passages"] = time.perf_counter() - t0
            if "oracle-filled" in variants:
                rec["variants"]["oracle-filled"] = self.oracle_filled(graph_cache[tuple(lex[i].names)]["candidates"],
                                                                      qvec, gold)
            prompt = None
            if wants_rerank:
                prompt = self._rerank_prompt_for(q, rerank_entities[i], t_ent, graph_cache, rec)
            prompts.append(prompt)
            records.append(rec)
        if wants_rerank:
            self._rerank_chunk(chunk, records, prompts, qvecs, naive_hits)
        return self._finish(records)

    def rerank_demos(self, item) -> list[dict]:
        """demos="nearest": the `shots` training questions nearest to `item` as finished rerank tasks (nearest last)."""
        if self.config.demos != "nearest":
            return []
        if self.demo_pool is None:
            raise ConfigError("demos='nearest' needs the training questions: build the method with "
                              "VectorRerank.prepare(config, dataset), or set method.demo_pool = "
                              "vector_rerank.demos.rerank_demo_pool(dataset, embedder).")
        from .stages.demos import rerank_demo

        chosen = [(d, rerank_demo(self.demo_pool, d.item)) for d in self.demo_pool.nearest(item, self.config.shots)]
        return [{**demo, "score": d.score} for d, demo in chosen[::-1] if demo is not None]

    def _rerank_prompt_for(self, q, ents: QueryEntities, t_ent: float, graph_cache: dict, rec: dict):
        """The rerank prompt over the candidates of the rerank seeds (None without candidates); books the entity call."""
        rec["timings"]["entities_llm"] = t_ent
        rec["tokens"]["prompt"] += ents.prompt_tokens
        rec["tokens"]["completion"] += ents.completion_tokens
        cand = graph_cache[tuple(ents.names)]["candidates"]
        demos = self.rerank_demos(q) if cand.size else []
        titles = self.candidate_titles(cand) if self.config.candidate_titles else None
        prompt = (rerank_prompt(q.question, [self.index.relation_sentences[j] for j in cand], self.config.select_n,
                                demos=demos, titles=titles) if cand.size else None)
        rec["rerank"] = {"prompt": prompt, "demos": [d["id"] for d in demos],
                         "demo_scores": [d["score"] for d in demos]}
        if self.demo_pool is not None and self.demo_pool.folds:  # cross-fitted: which fold the question sat in
            rec["rerank"]["demo_fold"] = self.demo_pool.fold_of(q)
        return prompt

    @staticmethod
    def _finish(records: list[dict]) -> list[dict]:
        """Total time per example; an example failed when its rerank failed."""
        for rec in records:
            rec["task"] = "kgqa" if rec.get("gold_key") == "answer" or "answers" in rec else "passages"
            rec["timings"]["total"] = float(sum(v for k, v in rec["timings"].items() if k != "total"))
            rec["failed"] = bool(rec["variants"].get("rerank", {}).get("failed", False))
        return records

    def ask_rerank(self, prompts: dict[int, Any], candidates: Sequence[Sequence[int]]) -> dict[int, RerankReply]:
        """The rerank replies (samples.py: one greedy reply, or `samples` replies and a vote) of the prompts (keyed by
        the question's position in the chunk), parsed against that question's candidate relations."""
        cfg = self.config
        sentences = {i: [self.index.relation_sentences[j] for j in candidates[i]] for i in prompts}
        return ask_rerank(self.llm, prompts, sentences, cfg.rerank_max_new_tokens, cfg.samples, cfg.sample_temperature)

    def _rerank_chunk(self, chunk, records, prompts, qvecs, naive_hits) -> None:
        cfg = self.config
        cands = [[c[0] for c in rec["graph"]["rerank"]["candidates"]] for rec in records]
        replies = self.ask_rerank({i: p for i, p in enumerate(prompts) if p is not None}, cands)
        for i, rec in enumerate(records):
            gold = rec["gold"]
            qvec = qvecs[i]
            rr = rec["rerank"]
            cand = cands[i]
            if i in replies:
                reply = replies[i]
                chosen = [cand[p] for p in reply.choice.positions]
                rr.update({**reply.record(), "structured": self.llm.structured,
                           "chosen": [[int(j), self.index.relation_sentences[j]] for j in chosen]})
                rec["tokens"]["prompt"] += reply.prompt_tokens
                rec["tokens"]["completion"] += reply.completion_tokens
                rec["timings"]["rerank_llm"] = reply.seconds
            else:
                chosen = []
                rr.update({"raw": None, "status": "no-candidates", "chosen": []})
            t0 = time.perf_counter()
            ranked = self.passages_of(chosen, qvec, cfg.final_k)
            if "rerank" in self.variants:
                rec["variants"]["rerank"] = self._score(ranked, gold, failed=not chosen)
            if "rerank-padded" in self.variants:
                padded = list(ranked)
                for p, _ in naive_hits[i]:
                    if len(padded) >= cfg.final_k:
                        break
                    if p not in padded:
                        padded.append(p)
                # the padded variant is defined even when the rerank fails (then it is naive): scored, not failed
                rec["variants"]["rerank-padded"] = self._score(padded, gold)
                rec["variants"]["rerank-padded"].update({"n_padded": len(padded) - len(ranked), "rerank_failed": not chosen})
            if "rerank-filled" in self.variants:
                filled = self.ranked_passages(cand, qvec, cfg.final_k, first=ranked)
                rec["variants"]["rerank-filled"] = self._score(filled, gold)
                rec["variants"]["rerank-filled"]["rerank_failed"] = not chosen
            rec["timings"]["rerank_passages"] = time.perf_counter() - t0
