"""Compact relation selection's derivation (no LLM): relation knowledge's proposals -> derivability check ->
compact facts -> derived answers -> consistency check -> gate, for a KG question (one chain, or one per
topic entity of a conjunctive question: conjunctive.py); a kinship story's is `KinshipCompact.derive` (kinship.py).

`CompactDerivation` is the part of the method class that `Compact._run_batch` (method.py) calls first."""

from __future__ import annotations

import time
from typing import Sequence

from ....metrics import hits_at_1
from .checks import ConsistencyReport, kg_consistency, relation_ids, select_derivable
from .conjunctive import branch_views, conjunctive_context, select_conjunctive
from .context import compact_context
from .fit import gold_chains, topic_entity_ids
from .gate import gate_passes
from .graphs import QuestionKGs
from .knowledge import as_chain, format_chain


class CompactDerivation:
    """The derivation stages of `Compact` (a mixin of the method class: it reads the method's knowledge, KGs
    and gate)."""

    # ------------------------------------------------------------------ derive (no LLM)
    def derive_many(self, items: Sequence, source: QuestionKGs | None = None) -> list[dict]:
        """Derive records for items; `source` gives their KGs (default: the evaluated dataset's).
        A conjunctive question is proposed for once per branch (one view per topic entity)."""
        views = [self._views(item) for item in items]
        flat = self.knowledge.propose_many([v for vs in views for v in vs])
        out, at = [], 0
        for item, vs in zip(items, views):
            props = flat[at:at + len(vs)]
            at += len(vs)
            out.append(self.derive(item, props if getattr(item, "conjunctive", False) else props[0], source))
        return out

    @staticmethod
    def _views(item) -> list:
        """The single-chain questions relation knowledge reads for an item (see conjunctive.py)."""
        return branch_views(item)

    def derive(self, item, proposals=None, source: QuestionKGs | None = None) -> dict:
        source = source or self.source
        return self._derive_kgqa(item, proposals, source.kg_for(item), per_question=source.per_question)

    def _derive_kgqa(self, q, proposals=None, kg=None, per_question: bool = False) -> dict:
        if getattr(q, "conjunctive", False):
            return self._derive_conjunctive(q, proposals, self.kg if kg is None else kg, per_question)
        cfg = self.config
        kg = self.kg if kg is None else kg
        t0 = time.perf_counter()
        topic_ids, missing = topic_entity_ids(kg, q.topic_entities)
        proposals = self.knowledge.propose(q) if proposals is None else proposals
        sel = select_derivable(kg, topic_ids, proposals, cfg.max_candidates, self.topic_policy)
        top = sel.proposal if sel.derivable else (proposals[0] if proposals else None)
        chain = top.chain if top is not None else None
        if sel.derivable:
            ctx = compact_context(kg, topic_ids, chain, cfg.max_facts or None, self.topic_policy)
        else:
            ctx = compact_context(kg, [], (), None)
        functional = relation_ids(kg, self.functional_names) if self.functional_names is not None else None
        cons = kg_consistency(kg, sel, ctx.edge_ids, cfg.rival_min_score, functional)
        gold = as_chain(q.chain) if q.chain else None
        golds = gold_chains(q)
        known = self._known_chains()
        rec = {
            "id": q.qid, "question": q.question, "topic_entities": list(q.topic_entities), "topic_missing": missing,
            "answers": list(q.answers), "answerable": q.answerable, "hops": q.hops, "qtype": q.qtype,
            "knowledge": self.knowledge.name, "gold_chain": format_chain(gold),
            "proposals": sel.tried,
            "chain": format_chain(chain), "chain_steps": [[r, f] for r, f in chain] if chain else [],
            "chain_source": top.source if top is not None else None,
            "chain_score": float(top.score) if top is not None else None,
            "chain_correct": (chain in golds) if golds else None,
            "n_gold_chains": len(golds),
            "gold_chain_seen": bool(golds & known) if golds and known is not None else None,
            "derivable": sel.derivable,
        }
        return self._finish_record(rec, q, kg, ctx, cons, t0, per_question)

    def _derive_conjunctive(self, q, proposals=None, kg=None, per_question: bool = False) -> dict:
        """Derive each branch's chain from its topic and intersect (see conjunctive.py); the record has
        the single-chain keys (chains joined by ' * ') plus `branches`, one entry per branch."""
        cfg = self.config
        t0 = time.perf_counter()
        views = branch_views(q)
        if proposals is None:
            proposals = [self.knowledge.propose(v) for v in views]
        topics = [topic_entity_ids(kg, v.topic_entities) for v in views]
        sels, meet = select_conjunctive(kg, [t[0] for t in topics], proposals, cfg.max_candidates, self.topic_policy)
        derivable = bool(meet.size)
        tops = [sel.proposal if derivable else (props[0] if props else None) for sel, props in zip(sels, proposals)]
        chains = [top.chain if top is not None else None for top in tops]
        if derivable:
            ctx = conjunctive_context(kg, [t[0] for t in topics], chains, cfg.max_facts or None, self.topic_policy)
        else:
            ctx = compact_context(kg, [], (), None)
        functional = relation_ids(kg, self.functional_names) if self.functional_names is not None else None
        reports = [kg_consistency(kg, sel, ctx.edge_ids if b == 0 else [], cfg.rival_min_score, functional)
                   for b, sel in enumerate(sels)]  # functional conflicts once, over the whole context
        cons = ConsistencyReport({k: any(r.applicable[k] for r in reports) for k in reports[0].applicable},
                                 {k: [c for r in reports for c in r.conflicts[k]] for k in reports[0].conflicts})
        known = self._known_chains()
        golds = [gold_chains(v) for v in views]
        correct = [(c in g) if g else None for c, g in zip(chains, golds)]
        sources = [top.source if top is not None else None for top in tops]
        rec = {
            "id": q.qid, "question": q.question, "topic_entities": list(q.topic_entities),
            "topic_missing": [m for t in topics for m in t[1]],
            "answers": list(q.answers), "answerable": q.answerable, "hops": q.hops, "qtype": q.qtype,
            "knowledge": self.knowledge.name, "conjunctive": True,
            "gold_chain": " * ".join(format_chain(v.chain) for v in views),
            "proposals": [t for sel in sels for t in sel.tried],
            "chain": " * ".join(format_chain(c) for c in chains),
            "chain_steps": [],  # one chain per branch: see `branches`
            # the weakest evidence among the branches speaks for the whole (a backoff chain in any branch)
            "chain_source": next((src for src in sources if src and src.endswith("fallback")), sources[0]),
            "chain_score": min((float(top.score) for top in tops if top is not None), default=None),
            "chain_correct": all(correct) if all(c is not None for c in correct) else None,
            "n_gold_chains": 1,
            "gold_chain_seen": (all(bool(g & known) for g in golds) if known is not None and all(golds) else None),
            "branches": [{"topic": v.topic_entities[0], "gold_chain": format_chain(v.chain), "chain": format_chain(c),
                          "chain_steps": [[r, f] for r, f in c] if c else [], "chain_source": src,
                          "chain_correct": ok, "n_reached": int(sel.answers_by_index[sel.index].size)
                          if sel.derivable else 0, "proposals": sel.tried}
                         for v, c, src, ok, sel in zip(views, chains, sources, correct, sels)],
            "derivable": derivable,
        }
        return self._finish_record(rec, q, kg, ctx, cons, t0, per_question)

    def _finish_record(self, rec: dict, q, kg, ctx, cons, t0: float, per_question: bool) -> dict:
        """The keys every KG-question record ends with (one chain or one per branch alike): the derived answers,
        the compact facts, the consistency report, the timing and the gate's decision."""
        derived = [str(x) for x in kg.entity_names[ctx.answers]]
        facts = kg.triples(ctx.edge_ids)
        rec.update({
            "derived_answers": derived[:50], "derived_support": [float(s) for s in ctx.support[:50]],
            "n_derived": len(derived),
            "derived_hits@1": hits_at_1(derived, q.answers),
            "compact_facts": [list(f) for f in facts], "n_facts": ctx.n_facts, "n_facts_full": ctx.n_facts_full,
            "capped": ctx.capped, "answers_in_context": int(ctx.answers_in_context.size),
            "compact_has_gold": bool(set(q.answers) & {t for f in facts for t in (f[0], f[2])}),
            "consistency": cons.to_record(), "consistent": cons.consistent,
            "seconds_derive": time.perf_counter() - t0,
        })
        if per_question:
            rec["subgraph_facts"] = int(kg.num_edges)
        rec["derived_correct"] = bool(rec["derived_hits@1"] == 1.0)
        rec["gate"] = gate_passes(self.gate.name, rec) if self.gate is not None else False
        return rec
