"""KGP end to end for one question: document set -> graph -> traversal -> reader -> metrics.

    kgp = KGP(KGPConfig(graph="tfidf", traversal="llm"), load_dataset("musique", split="all", limit=50))
    records = kgp.run(questions)        # one record per question: every intermediate artifact, metrics, tokens
    record = kgp.run_one(question)      # one question's record

The LLM (traversal agent and reader) and the embedder are loaded on first use only, so the
no-LLM variants never load a model. All LLM calls go through `kgrag_utils.llm` (cached).
"""

from __future__ import annotations

import time
import traceback
from dataclasses import dataclass
from typing import Sequence

from ...datasets.items import Dataset, PassageQuestion
from ...datasets.registry import dataset_names
from ...errors import ConfigError
from ...llm import GenerationConfig
from ..base import Method
from .config import KGPConfig
from .record import KGPRecord
from ..scoring import Headline
from ...metrics import EM, F1, recall_name
from .stages.docsets import DocumentSet, GoldUnits, PassageCorpus, gold_units
from .stages.evaluation import answer_metrics, retrieval_metrics
from .stages.graphs import PassageGraph, build_graph
from ...llm.structured import wants_schema
from .prompts import clean_answer, clean_evidence, evidence_prompt, reader_prompt, reader_schema
from .stages.similarity import SetIndex
from .stages.traversal import Evidence, TraversalResult, flat_retrieve, question_evidence, traverse

__all__ = ["KGP", "Prepared"]


@dataclass
class Prepared:
    """A question's document set with its TF-IDF / embedding index, graph and gold units."""

    dset: DocumentSet
    index: SetIndex
    graph: PassageGraph | None
    gold: GoldUnits
    set_seconds: float
    graph_seconds: float


class KGP(Method):
    """Runs KGP (or one of its variants) over a passage dataset: `KGP(config, dataset, llm=None, embedder=None)`
    (`KGP.prepare(config, dataset)` is the same). The LLM (traversal agent and reader) and the embedder
    are loaded on first use, from the config, and shared with every `sibling` (a variant config)."""

    name = "kgp"
    notebook = "04_kgp.ipynb"
    config_class = KGPConfig
    record_type = KGPRecord
    headline = Headline(((EM, F1), (recall_name(5), recall_name(30))))
    color = "#e7298a"
    label = "KGP"
    kinds = {"passages": ""}  # passage datasets with a corpus (`Method.reader_for`)

    def __init__(self, config: KGPConfig | None = None, dataset: Dataset | None = None, llm=None, embedder=None,
                 _shared: dict | None = None, demo_pool=None):
        if (config is not None and not isinstance(config, KGPConfig)) or not isinstance(dataset, Dataset):
            raise ConfigError("KGP(config, dataset, llm=None, embedder=None): the config comes first "
                              "(see docs/MIGRATION.md).")
        if dataset.kind != "passages" or not dataset.corpus:
            raise ConfigError(f"KGP needs a passage dataset with a corpus ({', '.join(dataset_names(kind='passages'))}), "
                              f"got {dataset.name!r}.")
        self.dataset = dataset
        self.config = config or KGPConfig()
        self.corpus = PassageCorpus(dataset.corpus, self.config.split_rule, self.config.window, self.config.stride,
                                    self.config.title_in_text, page_key=dataset.traits.page_key)  # a page: docsets
        self._shared = _shared if _shared is not None else {"llm": None, "embedder": None}
        if llm is not None:
            self._shared["llm"] = llm
        if embedder is not None:
            self._shared["embedder"] = embedder
        self._whole: tuple[DocumentSet, SetIndex, PassageGraph | None, float, float] | None = None
        self._attach_demos(demo_pool)

    @classmethod
    def prepare(cls, config: KGPConfig, dataset: Dataset, *, llm=None, embedder=None) -> "KGP":
        return cls.reader_for(dataset)(config, dataset, llm=llm, embedder=embedder)

    def sibling(self, **changes) -> "KGP":
        """The same dataset under `config.replace(**changes)`, sharing this one's models (loaded or not yet)."""
        return KGP(self.config.replace(**changes), self.dataset, _shared=self._shared,
                   demo_pool=self.demo_pool)  # one pool for all variants (built only where this one has none)

    def _attach_demos(self, pool=None) -> None:
        """demos="nearest" with an LLM agent: `pool`, or the training split's (refused here, before any question runs)."""
        self.demo_pool = None
        if self.config.demos == "nearest" and self.config.uses_llm_traversal:
            from .stages.demos import agent_demo_pool

            self.demo_pool = pool if pool is not None else agent_demo_pool(self.dataset, self.embedder,
                                                                           pool=self.config.demo_pool)

    # ------------------------------------------------------------------ lazy models
    @property
    def llm(self):
        if self._shared["llm"] is None:
            self._shared["llm"] = self.config.load_llm()
        return self._shared["llm"]

    @llm.setter
    def llm(self, value) -> None:
        self._shared["llm"] = value

    @property
    def loaded_llm(self):
        return self._shared["llm"]

    @property
    def embedder(self):
        if self._shared["embedder"] is None:
            from ...embeddings import load_embedder

            self._shared["embedder"] = load_embedder(self.config.embedder)
        return self._shared["embedder"]

    @property
    def loaded_embedder(self):
        return self._shared["embedder"]

    def _encode(self, texts: list[str]):
        return self.embedder.encode(texts, progress=False)

    # ------------------------------------------------------------------ stages
    def _index_and_graph(self, dset: DocumentSet) -> tuple[SetIndex, PassageGraph | None, float]:
        cfg = self.config
        index = SetIndex(dset.retrieval_texts(), encode=self._encode)
        graph = None
        t0 = time.perf_counter()
        if cfg.uses_graph and cfg.graph != "none":
            graph = build_graph(dset, cfg.graph, tfidf=index.matrix, embeddings=lambda: index.embeddings,
                                n_keywords=cfg.n_keywords, keyword_max_df=cfg.keyword_max_df,
                                keyword_titles=cfg.keyword_titles, knn_k=cfg.knn_k, entity_max_df=cfg.entity_max_df,
                                structural=cfg.structural)
        return index, graph, time.perf_counter() - t0

    def prepare_question(self, question: PassageQuestion) -> Prepared:
        """The question's set (or the shared whole-corpus set), its index and graph, and gold units."""
        t0 = time.perf_counter()
        if self.config.whole_corpus:
            if self._whole is None:
                dset = self.corpus.whole_set()
                t1 = time.perf_counter()
                index, graph, gsec = self._index_and_graph(dset)
                self._whole = (dset, index, graph, t1 - t0, gsec)
            dset, index, graph, ssec, gsec = self._whole
            return Prepared(dset, index, graph, gold_units(question, dset), ssec, gsec)
        dset = self.corpus.question_set(question, self.config.set_passages, self.config.seed)
        ssec = time.perf_counter() - t0
        index, graph, gsec = self._index_and_graph(dset)
        return Prepared(dset, index, graph, gold_units(question, dset), ssec, gsec)

    def agent_demos(self, question: PassageQuestion) -> list[dict]:
        """demos="nearest": the `shots` training questions nearest to `question` as agent steps (nearest last)."""
        if self.config.demos != "nearest" or self.demo_pool is None:
            return []
        from .stages.demos import agent_demo

        return [{**agent_demo(d.item, self.config.passage_chars), "score": d.score}
                for d in self.demo_pool.nearest(question, self.config.shots)[::-1]]

    def evidence_fn(self, dset: DocumentSet, demos: Sequence[dict] = ()):
        """The LLM traversal agent over one set: writes the next evidence for a batch of paths."""
        cfg = self.config

        def next_evidence(question: str, paths: Sequence[tuple[int, ...]]) -> list[Evidence]:
            prompts = [evidence_prompt(question, [(dset.titles[i], dset.texts[i]) for i in path[-cfg.path_passages:]],
                                       cfg.passage_chars, demos=demos) for path in paths]
            results = self.llm.generate(prompts, GenerationConfig(max_new_tokens=cfg.evidence_max_new_tokens))
            out = []
            for prompt, r in zip(prompts, results):
                text = clean_evidence(r.text)
                out.append(Evidence(text=text or question, raw=r.text, prompt=prompt, failed=not text,
                                    prompt_tokens=r.prompt_tokens, completion_tokens=r.completion_tokens,
                                    cached=r.cached, seconds=r.seconds))
            return out

        return next_evidence

    def retrieve(self, question: PassageQuestion, prep: Prepared, demos: Sequence[dict] = ()) -> TraversalResult:
        cfg = self.config
        if cfg.traversal in ("tfidf", "knn"):
            return flat_retrieve(prep.index, question.question, cfg.traversal, min(cfg.budget, len(prep.dset)))
        agent = self.evidence_fn(prep.dset, demos) if cfg.uses_llm_traversal else question_evidence
        graph = None if cfg.traversal == "nograph" else prep.graph
        return traverse(question.question, prep.index, graph, cfg, agent)

    def read(self, question: PassageQuestion, dset: DocumentSet, ranked: Sequence[int]) -> dict:
        """The reader: the LLM answers from the first `reader_passages` retrieved passages."""
        cfg = self.config
        passages = [(dset.titles[i], dset.texts[i]) for i in list(ranked)[:cfg.reader_passages]]
        form = "json" if wants_schema(self.llm) else "text"
        prompt = reader_prompt(question.question, passages, cfg.reader_passage_chars, form=form)
        r = self.llm.generate([prompt], GenerationConfig(max_new_tokens=cfg.reader_max_new_tokens,
                                                         schema=reader_schema(question.question)))[0]
        answer = clean_answer(r.text)
        return {"reader_prompt": prompt, "reader_raw": r.text, "answer": answer, "reader_failed": not answer,
                "reader_prompt_tokens": r.prompt_tokens, "reader_completion_tokens": r.completion_tokens,
                "reader_cached": r.cached, "reader_seconds": r.seconds, "reader_finish": r.finish_reason,
                "structured": self.llm.structured}

    # ------------------------------------------------------------------ the run (Method.run: resume, progress)
    def _run_batch(self, questions: Sequence[PassageQuestion]) -> list[dict]:
        return [self.run_one(q) for q in questions]

    def progress_label(self) -> str:
        return f"KGP {self.config.graph}/{self.config.traversal}"

    def run_one(self, question: PassageQuestion) -> dict:
        """One question's full record. Exceptions become a failed record (counted, never dropped)."""
        cfg = self.config
        rec: dict = {"id": question.qid, "question": question.question, "answers": list(question.answers),
                     "qtype": question.qtype, "supporting": list(question.supporting), "failed": False,
                     "ks": list(cfg.ks), "reader": cfg.reader,
                     "variant": f"traversal={cfg.traversal}, graph={cfg.graph}"}
        try:
            prep = self.prepare_question(question)
            dset = prep.dset
            rec.update({"set_passages": len(dset), "set": dset.summary(), "gold_units": prep.gold.units,
                        "gold_kind": prep.gold.kind, "gold_fallback": prep.gold.n_fallback})
            if prep.graph is not None:
                st = prep.graph.stats()
                rec.update({"graph": st, "graph_density": st["density"], "graph_avg_degree": st["avg_degree"]})
            demos = self.agent_demos(question) if cfg.uses_llm_traversal else []
            rec["agent_demos"] = [d["id"] for d in demos]
            rec["agent_demo_scores"] = [d["score"] for d in demos]
            if self.demo_pool is not None and self.demo_pool.folds:  # cross-fitted: the question's fold
                rec["agent_demo_fold"] = self.demo_pool.fold_of(question)
            res = self.retrieve(question, prep, demos)
            pid = dset.pids
            rec["seeds"] = [{"pid": pid[s], "score": round(float(sc), 5)} for s, sc in zip(res.seeds, res.seed_scores)]
            rec["hops"] = [{**h, "path": [pid[i] for i in h["path"]], "chosen": [pid[i] for i in h["chosen"]]}
                           for h in res.hops]
            rec["retrieved"] = [pid[i] for i in res.ranked]
            rec["n_agent_calls"], rec["n_reseeds"] = res.n_agent_calls, res.n_reseeds
            rec.update(retrieval_metrics(res.ranked, prep.gold, cfg.ks))
            agent_in = sum(h["prompt_tokens"] for h in res.hops)
            agent_out = sum(h["completion_tokens"] for h in res.hops)
            timings = {"set_seconds": prep.set_seconds, "graph_seconds": prep.graph_seconds,
                       "traversal_seconds": res.seconds}
            tokens = {"agent_prompt": agent_in, "agent_completion": agent_out}
            if cfg.reader:
                t0 = time.perf_counter()
                read = self.read(question, dset, res.ranked)
                timings["reader_seconds"] = time.perf_counter() - t0
                tokens.update(reader_prompt=read.pop("reader_prompt_tokens"),
                              reader_completion=read.pop("reader_completion_tokens"))
                rec.update(read)
                rec.update(answer_metrics(read["answer"], question.answers))
            rec["timings"], rec["tokens"] = timings, tokens
        except Exception as exc:  # noqa: BLE001 - recorded, counted as wrong, never dropped
            rec.update({"failed": True, "error": f"{type(exc).__name__}: {exc}",
                        "traceback": traceback.format_exc(limit=4)})
        return rec
