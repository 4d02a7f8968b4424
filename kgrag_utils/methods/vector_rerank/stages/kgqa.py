"""Vector retrieval + LLM rerank on KG question datasets (MetaQA, PathQuestion): answers from the chosen facts.

The index is `GraphIndex.from_kg`: entities are the KG's names, relations are its facts verbalised
"head relation tail", and there are no passages, so the unit of retrieval is the fact. Per question:
embed -> seeds (the entities the question marks: MetaQA [brackets], PathQuestion snake_case names;
else the lexical rules, or the LLM with entity_extraction="llm") -> expansion -> cap by similarity ->
ONE rerank call choosing facts (the passage method's prompt and parser) -> ONE answer call over the
chosen facts, read by the shared `parse_answer_list` (known = the entity names in those facts) and
scored with the shared strict `hits_at_1` and lenient `containment`.

Variants (labelled in records and summaries):
* naive   the `final_k` facts nearest the question (dense fact search; no graph, no LLM);
* expand  seeds + expansion, the `final_k` candidates most similar to the question (no LLM);
* rerank  the method: the LLM's chosen facts (at most `final_k`) and its answer from them.
On facts, expand's top `final_k` equals naive's whenever relation_topk >= final_k (the seed relations
ARE the nearest facts, and the expansion is ranked by the same similarity; measured: 79 of 80 MetaQA
2-hop and 100 of 100 PathQuestion 2-hop questions identical). What the graph adds is in the candidate
coverage, `candidate_fact_hit`: a gold answer among the `candidate_cap` facts the rerank chooses from.
Every variant gets `fact_hit` (a returned fact has a gold answer as head or tail: no LLM needed);
rerank also gets `hits@1` and `containment`. A rerank with no candidates, an answer that maps to
no candidate, or an answer call that names nothing is a failure and scores 0.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Sequence

import numpy as np

from ....metrics import containment, hits_at_1, normalize_answer
from ....parsers import parse_answer_list
from ..config import KGQA_VARIANT_LABELS, KGQA_VARIANTS, VectorRerankConfig
from ..method import VectorRerank
from ....llm.structured import wants_schema
from ..prompts import ANSWER_SCHEMA, answer_prompt
from .query_entities import QueryEntities, lexical_entities, marked_entities

if TYPE_CHECKING:  # pragma: no cover
    from ....llm import LLM
    from .graph_index import GraphIndex

__all__ = ["KGQA_VARIANTS", "KGQA_VARIANT_LABELS", "FactRerank", "kgqa_variants", "fact_hits"]


def kgqa_variants(config: VectorRerankConfig) -> tuple[str, ...]:
    """The variants a KG question run evaluates: "all" means naive, expand, rerank."""
    return config.variants_for("kgqa")


def fact_hits(index: "GraphIndex", rel_ids: Sequence[int], golds: Sequence[str]) -> float:
    """1.0 when one of the facts has a gold answer (normalised) as its head or tail, else 0.0; nan without golds."""
    gold = {normalize_answer(g) for g in golds} - {""}
    if not gold:
        return float("nan")
    ids = np.asarray(list(rel_ids), dtype=np.int64)
    if ids.size == 0:
        return 0.0
    ends = np.concatenate([index.heads[ids], index.tails[ids]])
    return float(any(normalize_answer(index.entity_names[e]) in gold for e in np.unique(ends)))


class FactRerank(VectorRerank):
    """The method over a KG's facts; `run(questions)` gives one record per KGQuestion (resumable)."""

    dataset_kind = "kgqa"

    def __init__(self, config: VectorRerankConfig | None = None, index: "GraphIndex | None" = None,
                 llm: "LLM | None" = None, gold_key: str | None = None, **built):
        super().__init__(config, index, llm, gold_key="pid", **built)
        self.gold_key = "answer"  # the gold is the question's answers (a passage dataset's gold_key does not apply)
        self.variants = kgqa_variants(self.config)

    def error_fields(self) -> dict:
        return {"question": lambda q: q.question, "qtype": lambda q: q.qtype, "task": lambda q: "kgqa",
                "hops": lambda q: q.hops, "answerable": lambda q: q.answerable, "answers": lambda q: list(q.answers),
                "topic_entities": lambda q: list(q.topic_entities)}

    def lexical(self, question: str) -> QueryEntities:
        names = marked_entities(question, self.index.entity_ids)
        if names:
            return QueryEntities(names, "lexical", notes=["entities marked in the question"])
        names = lexical_entities(question, self.index.entity_ids)
        return QueryEntities(names, "lexical") if names else QueryEntities([question], "question")

    def _facts(self, rel_ids: Sequence[int]) -> list[list]:
        return [[int(j), self.index.relation_sentences[j]] for j in rel_ids]

    def _fact_row(self, rel_ids: Sequence[int], golds: Sequence[str]) -> dict:
        return {"facts": self._facts(rel_ids), "n_facts": len(rel_ids), "fact_hit": fact_hits(self.index, rel_ids, golds),
                "failed": False}

    def _run_chunk(self, chunk: Sequence) -> list[dict]:
        cfg, variants, n = self.config, self.variants, len(chunk)
        texts = [q.question for q in chunk]
        t0 = time.perf_counter()
        qvecs = self.index.encode(texts)
        t_embed = (time.perf_counter() - t0) / n
        t0 = time.perf_counter()
        naive_hits = self.index.search_relations(qvecs, cfg.final_k) if "naive" in variants else [[] for _ in chunk]
        t_naive = (time.perf_counter() - t0) / n
        lex = [self.lexical(t) for t in texts]
        rerank_entities: list[QueryEntities] = lex
        t_ent = 0.0
        if "rerank" in variants and cfg.entity_extraction == "llm":
            t0 = time.perf_counter()
            rerank_entities = self.llm_entities(texts)
            t_ent = (time.perf_counter() - t0) / n
        records, prompts = [], []
        for i, q in enumerate(chunk):
            golds = list(q.answers)
            qvec = qvecs[i]
            rec = {"id": q.qid, "question": q.question, "qtype": q.qtype, "hops": q.hops, "answerable": q.answerable,
                   "topic_entities": list(q.topic_entities), "answers": golds, "variants": {},
                   "timings": {"embed": t_embed}, "tokens": {"prompt": 0, "completion": 0}, "graph": {}}
            if "naive" in variants:
                rec["timings"]["naive"] = t_naive
                rec["variants"]["naive"] = self._fact_row([r for r, _ in naive_hits[i]], golds)
            graph_cache: dict[tuple, dict] = {}
            for role, ents in (("expand", lex[i]), ("rerank", rerank_entities[i])):
                if role not in variants:
                    continue
                g = self._graph_for(qvec, ents, graph_cache)
                rec["graph"][role] = self._graph_record(ents, g)
                rec["graph"][role]["candidate_fact_hit"] = fact_hits(self.index, g["candidates"], golds)
                rec["timings"][f"{role}_seeds"] = g["t_seeds"]
                rec["timings"][f"{role}_expand"] = g["t_expand"]
            if "expand" in variants:
                rec["variants"]["expand"] = self._fact_row(graph_cache[tuple(lex[i].names)]["candidates"][:cfg.final_k], golds)
            prompt = None
            if "rerank" in variants:
                prompt = self._rerank_prompt_for(q, rerank_entities[i], t_ent, graph_cache, rec)
            prompts.append(prompt)
            records.append(rec)
        if "rerank" in variants:
            self._rerank_and_answer(chunk, records, prompts)
        return self._finish(records)

    def _rerank_and_answer(self, chunk, records: list[dict], prompts: list) -> None:
        cfg = self.config
        cands = [[c[0] for c in rec["graph"]["rerank"]["candidates"]] for rec in records]
        chosen_by: dict[int, list[int]] = {}
        for i, reply in self.ask_rerank({i: p for i, p in enumerate(prompts) if p is not None}, cands).items():
            rec = records[i]
            chosen = [cands[i][p] for p in reply.choice.positions][: cfg.final_k]
            chosen_by[i] = chosen
            rec["rerank"].update({**reply.record(), "chosen": self._facts(chosen)})
            rec["tokens"]["prompt"] += reply.prompt_tokens
            rec["tokens"]["completion"] += reply.completion_tokens
            rec["tokens"]["rerank_prompt"] = reply.replies[0].prompt_tokens
            rec["timings"]["rerank_llm"] = reply.seconds
        for i, rec in enumerate(records):
            if i not in chosen_by:
                rec["rerank"].update({"raw": None, "status": "no-candidates", "chosen": []})
        ask = [i for i in range(len(records)) if chosen_by.get(i)]
        answers = {}
        if ask:
            t0 = time.perf_counter()
            form = "json" if wants_schema(self.llm) else "text"
            outs = self.llm.generate([answer_prompt(chunk[i].question, [self.index.relation_sentences[j] for j in chosen_by[i]],
                                                    form=form)
                                      for i in ask], max_new_tokens=cfg.answer_max_new_tokens, schema=ANSWER_SCHEMA)
            wall = (time.perf_counter() - t0) / len(ask)
            answers = {i: (r, wall) for i, r in zip(ask, outs)}
        for i, rec in enumerate(records):
            golds = rec["answers"]
            chosen = chosen_by.get(i, [])
            row = self._fact_row(chosen, golds)
            if i in answers:
                r, wall = answers[i]
                known = sorted({self.index.entity_names[e] for j in chosen for e in (self.index.heads[j], self.index.tails[j])})
                preds = parse_answer_list(r.text, known=known)
                ok = bool(preds)
                row.update({"answer_raw": r.text, "predictions": preds, "answer_cached": r.cached, "failed": not ok,
                            "hits@1": hits_at_1(preds, golds) if ok else 0.0,
                            "containment": containment(r.text, golds) if ok else 0.0,
                            "answer_status": "ok" if ok else "no-answer"})
                rec["tokens"]["prompt"] += r.prompt_tokens
                rec["tokens"]["completion"] += r.completion_tokens
                rec["tokens"]["answer_prompt"] = r.prompt_tokens
                rec["timings"]["rerank_answer_llm"] = wall
            else:
                row.update({"answer_raw": None, "predictions": [], "failed": True, "hits@1": 0.0, "containment": 0.0,
                            "answer_status": rec["rerank"]["status"] if not chosen else "not-asked"})
            rec["variants"]["rerank"] = row
