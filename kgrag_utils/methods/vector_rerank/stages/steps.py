"""Vector rerank's retrieval stages of one question: query entities, seeds, the expanded and capped graph, the
passages of relations, and the recall of a ranked passage list.

`VectorRerankStages` is the part of the method class that `VectorRerank._run_chunk` (method.py) calls per
question; the rerank call and its vote are stages/samples.py."""

from __future__ import annotations

import time
from typing import Iterable, Sequence

import numpy as np

from ....metrics import recall_at_k
from ..config import RECALL_KS
from ..prompts import ENTITY_SCHEMA, entity_prompt
from .expansion import Expansion, cap_by_similarity, expand
from .query_entities import QueryEntities, lexical_entities, parse_entity_answer



_ENTITY_STOP = ("\nQuestion:",)


class VectorRerankStages:
    """The retrieval stages of `VectorRerank` (a mixin of the method class: it reads the method's config,
    index, embedder and LLM)."""

    # ------------------------------------------------------------------ stages
    def lexical(self, question: str) -> QueryEntities:
        names = lexical_entities(question, self.index.entity_ids)
        return QueryEntities(names, "lexical") if names else QueryEntities([question], "question")

    def llm_entities(self, questions: Sequence[str]) -> list[QueryEntities]:
        """Few-shot LLM extraction for a batch; the lexical fallback where an answer has no usable list."""
        results = self.llm.generate([entity_prompt(q) for q in questions], max_new_tokens=self.config.entity_max_new_tokens,
                                    schema=ENTITY_SCHEMA,
                                    stop=_ENTITY_STOP)
        out = []
        for q, r in zip(questions, results):
            names = parse_entity_answer(r.text, q)
            if names:
                qe = QueryEntities(names, "llm")
            else:
                qe = self.lexical(q)
                qe.notes.append("llm answer had no JSON list of names found in the question: lexical fallback")
            dropped = [n for n in (parse_entity_answer(r.text) or []) if n not in (names or [])]
            if dropped:
                qe.notes.append(f"dropped names not in the question: {dropped}")
            qe.raw, qe.prompt_tokens, qe.completion_tokens = r.text, r.prompt_tokens, r.completion_tokens
            qe.notes.append(f"llm_seconds={r.seconds:.3f}")
            out.append(qe)
        return out

    def seeds(self, qvec: np.ndarray, entities: QueryEntities) -> dict:
        """Seed entities (top-k per query entity, cosine >= entity_min_score) and seed relations (top-k)."""
        cfg = self.config
        best: dict[int, float] = {}
        if entities.names:
            vecs = self.index.encode(entities.names)
            for hits in self.index.search_entities(vecs, cfg.entity_topk):
                for eid, score in hits:
                    if score >= cfg.entity_min_score and score > best.get(eid, -np.inf):
                        best[eid] = score
        rel_hits = self.index.search_relations(qvec[None, :], cfg.relation_topk)[0]
        ents = sorted(best.items(), key=lambda x: (-x[1], x[0]))
        return {"entity_ids": [e for e, _ in ents], "entity_scores": [s for _, s in ents],
                "relation_ids": [r for r, _ in rel_hits], "relation_scores": [s for _, s in rel_hits]}

    def expand_and_cap(self, qvec: np.ndarray, seeds: dict) -> tuple[Expansion, np.ndarray, np.ndarray]:
        exp = expand(self.index.incidence, self.index.incidence_t, seeds["entity_ids"], seeds["relation_ids"],
                     self.config.degree)
        sims = self.index.relation_similarity(exp.relation_ids, qvec)
        cand, cand_sims = cap_by_similarity(exp.relation_ids, sims, self.config.candidate_cap)
        return exp, cand, cand_sims

    def passages_of(self, rel_ids: Iterable[int], qvec: np.ndarray, k: int) -> list[int]:
        """Passage positions of the relations, in relation order (ties by query similarity), deduplicated, top k."""
        out: list[int] = []
        seen: set[int] = set()
        pv = self.index.passage_vecs
        for rid in rel_ids:
            ps = self.index.relation_passages(int(rid))
            if ps.size > 1:
                ps = ps[np.argsort(-(pv[ps] @ qvec), kind="stable")]
            for p in ps.tolist():
                if p not in seen:
                    seen.add(p)
                    out.append(p)
                    if len(out) >= k:
                        return out
        return out

    def ranked_passages(self, rel_ids: Sequence[int], qvec: np.ndarray, k: int, first: Sequence[int] = ()) -> list[int]:
        """`first` (passage positions, kept in order), then the passages of `rel_ids` ranked by `fill_order`, top k.

        fill_order "passage": each candidate passage by its own similarity to the question (ties by position);
        "relation": in the order of the relations (passages_of)."""
        out = list(dict.fromkeys(int(p) for p in first))[:k]
        if len(out) >= k:
            return out
        if self.config.fill_order == "relation":
            rest = self.passages_of(rel_ids, qvec, k + len(out))
        else:
            parts = [self.index.relation_passages(int(r)) for r in rel_ids]
            ps = np.unique(np.concatenate(parts)) if parts else np.empty(0, dtype=np.int64)
            rest = ps[np.argsort(-(self.index.passage_vecs[ps] @ qvec), kind="stable")].tolist()
        seen = set(out)
        for p in rest:
            if p not in seen:
                seen.add(p)
                out.append(int(p))
                if len(out) >= k:
                    break
        return out

    def oracle_filled(self, candidates: Sequence[int], qvec: np.ndarray, gold: list[str]) -> dict:
        """The ceiling of any reranker over `candidates` (the "oracle-filled" variant): in similarity order, one pick
        for each gold passage the candidates reach and no earlier pick covers (at most `select_n`), their passages
        first, then the rest as rerank-filled; with the share of the gold the candidates reach at all (`coverage`)."""
        gold_set = set(gold)
        keys = {int(c): set(self._keys(self.index.relation_passages(int(c)).tolist())) for c in candidates}
        picks: list[int] = []
        covered: set[str] = set()
        for c, reached in keys.items():
            new = (gold_set & reached) - covered
            if new and len(picks) < self.config.select_n:
                picks.append(c)
                covered |= new
        k = self.config.final_k
        row = self._score(self.ranked_passages(list(keys), qvec, k, first=self.passages_of(picks, qvec, k)), gold)
        reachable = set().union(*keys.values()) if keys else set()
        row.update(coverage=len(gold_set & reachable) / len(gold_set) if gold_set else 0.0, picks=len(picks),
                   gold_candidates=sum(bool(gold_set & r) for r in keys.values()))
        return row

    # ------------------------------------------------------------------ scoring
    def _keys(self, positions: Sequence[int]) -> list[str]:
        names = self.index.passage_titles if self.gold_key == "title" else self.index.passage_pids
        return [names[p] for p in positions]

    def _score(self, positions: list[int], gold: list[str], failed: bool = False) -> dict:
        keys = self._keys(positions)
        row = {"passages": [self.index.passage_pids[p] for p in positions], "n_passages": len(positions),
               "failed": bool(failed),
               "recall_curve": [recall_at_k(keys, gold, k) for k in range(1, self.config.final_k + 1)]}
        for k in RECALL_KS:
            row[f"recall@{k}"] = recall_at_k(keys, gold, k)
        return row



    def _graph_for(self, qvec, ents: QueryEntities, graph_cache: dict) -> dict:
        """Seeds, expansion and capped candidates for one set of query entities (computed once per set)."""
        key = tuple(ents.names)
        if key not in graph_cache:
            t0 = time.perf_counter()
            seeds = self.seeds(qvec, ents)
            t1 = time.perf_counter()
            exp, cand, cand_sims = self.expand_and_cap(qvec, seeds)
            graph_cache[key] = {"seeds": seeds, "expansion": exp, "candidates": cand, "candidate_scores": cand_sims,
                                "t_seeds": t1 - t0, "t_expand": time.perf_counter() - t1}
        return graph_cache[key]


    def candidate_titles(self, rel_ids: Sequence[int], most: int = 2) -> list[str]:
        """config candidate_titles: per relation, the titles of the passages it was read from (distinct, at most
        `most`, joined by "; "; "" where a relation has none)."""
        idx = self.index
        out = []
        for j in rel_ids:
            names = dict.fromkeys(str(idx.passage_titles[p]) for p in idx.relation_passages(int(j)))
            out.append("; ".join([n for n in names if n][:most]))
        return out


    def _graph_record(self, ents: QueryEntities, g: dict) -> dict:
        idx = self.index
        exp: Expansion = g["expansion"]
        seeds = g["seeds"]
        return {
            "query_entities": ents.names, "entity_source": ents.source, "entity_raw": ents.raw, "entity_notes": ents.notes,
            "seed_entities": [[int(e), idx.entity_names[e], round(float(s), 4)] for e, s in zip(seeds["entity_ids"], seeds["entity_scores"])],
            "seed_relations": [[int(r), idx.relation_sentences[r], round(float(s), 4)]
                               for r, s in zip(seeds["relation_ids"], seeds["relation_scores"])],
            "expansion_size": len(exp), "expansion_by_hop": exp.size_by_hop(),
            "candidates": [[int(r), idx.relation_sentences[r], round(float(s), 4)]
                           for r, s in zip(g["candidates"], g["candidate_scores"])],
            "candidate_triples": [list(t) for t in idx.triples(g["candidates"])],  # (head, predicate, tail) per candidate
        }
