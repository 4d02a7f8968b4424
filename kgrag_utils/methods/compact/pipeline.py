"""The method end to end, as named stages that return one record per example.

    prepare  -> relation knowledge fitted on the training split; lift threshold and gate chosen on
                a held-out validation portion of it (never on the evaluated items)
    derive   -> proposals -> derivability check -> compact facts -> derived answers -> consistency
                -> gate decision                                     (no LLM; the benchmark stops here)
    baseline -> the top-k facts by embedding similarity (KG questions) or the whole story (kinship)
    answer   -> the same LLM reads each context under the same prompt; the gate decides whether
                the derived answer replaces the LLM's

Every record keeps the intermediate artifacts (proposals with their sources, the chosen chain,
facts, derived answers, checks, gate, prompts, raw LLM output, parsed answers, tokens, scores).

A conjunctive question (several chains meeting at the answer, WC2014's WC-C) is read once per topic
entity, each branch's chain is derived from its topic and the derived answers are the intersection
(conjunctive.py); relation knowledge learns from the training questions' branches the same way.

Each question is answered from its own KG as `QuestionKGs` gives it: the dataset's KG (MetaQA,
PathQuestion) or the question's released subgraph (WebQSP and CWQ as released by RoG, whose
training chains are the shortest topic-to-answer chains; see graphs.py). The reader's score for
KG questions is the paper's exact match: the reply's first answer, SQuAD-normalised, equals a
gold answer (= strict Hits@1, the `hits@1_*` keys).
"""

from __future__ import annotations

import time
from typing import Iterable, Sequence


from ...errors import ConfigError
from ...metrics import CONTAINMENT, HITS1, containment, hits_at_1
from ..base import Method
from .checks import (ConsistencyReport, context_derivation, kg_consistency, kinship_consistency, relation_ids,
                     select_derivable)
from .conjunctive import branch_views, conjunctive_context, expand_branches, select_conjunctive
from .config import CompactConfig
from .record import CompactRecord
from ..scoring import Headline
from .context import (choose_topic_policy, compact_context, kinship_facts, kinship_sentence, topk_contexts,
                      topk_contexts_per_question)
from .gate import GateChoice, choose_gate, gate_passes
from .graphs import QuestionKGs, functional_relation_names
from .knowledge import Chain, RelationKnowledge, as_chain, format_chain
from .knn import KNNVote
from .hybrid import HybridKnowledge
from .lexicon import LiftLexicon
from ...llm.structured import wants_schema
from .prompts import ANSWER_SCHEMA, kgqa_prompt, kinship_prompt, kinship_schema, parse_answers, parse_kinship_answer
from .rules import KinshipRuleKnowledge, story_graph
from .splits import split_validation
from .statistics import derivation_statistics

__all__ = ["Compact", "tune_lift_threshold", "HUMAN_WRITTEN", "auto_knowledge", "gold_chains"]

#: datasets of human-written questions: knowledge="auto" uses the kNN chain vote there (the paper's
#: choice for free wording), the hybrid of lift lexicon and vote elsewhere (templated training questions),
#: the rules for kinship
HUMAN_WRITTEN = ("webqsp", "cwq", "webqsp-paths", "cwq-paths", "webqsp-test18")

# ----------------------------------------------------------------------------- splits
def auto_knowledge(dataset) -> str:
    """The knowledge source knowledge="auto" means: rules (kinship), knn (WebQSP/CWQ), hybrid (the rest:
    templated training questions, read by the lexicon where their wording is known and by the kNN vote
    where it is not, so paraphrased and noisy questions keep most of their accuracy; hybrid.py)."""
    if dataset.kind == "kinship":
        return "rules"
    name = str(dataset.name)
    base = name[len("fixture-"):] if name.startswith("fixture-") else name
    return "knn" if base in HUMAN_WRITTEN else "hybrid"


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
        topics = _topic_ids(qkg, q.topic_entities)[0]
        gold = gold_chains(q)
        for th in grid:
            sel = select_derivable(qkg, topics, proposals[th][i], max_candidates, policy)
            right[th] += int(sel.derivable and sel.proposal.chain in gold)
    table = [{"threshold": th, "n_validation": len(val_items), "n_pairs": n_pairs[th],
              "chain_accuracy": right[th] / len(val_items) if val_items else float("nan")} for th in grid]
    best = max(table, key=lambda r: (r["chain_accuracy"], r["threshold"]))
    lexicon.set_threshold(best["threshold"])
    return best["threshold"], table


def _topic_ids(kg, names: Iterable[str]) -> tuple[list[int], list[str]]:
    ids, missing = [], []
    for name in names:
        try:
            ids.append(int(kg.entity_id(name)))
        except Exception:  # ConfigError for unknown names (the reconstructed MetaQA KB lacks some)
            missing.append(name)
    return ids, missing


def _training_data(dataset, train, source: QuestionKGs | None = None) -> tuple[list, QuestionKGs | None]:
    """(training items, where their KGs come from). The training split is loaded by name unless given;
    with per-question subgraphs it must be a Dataset (its items' subgraphs live in it)."""
    from ...datasets.registry import training_dataset

    if train is None:  # the same registered dataset and options (a file dataset: its training cut or file)
        train = training_dataset(dataset)
    items = list(train.items if hasattr(train, "items") else train)
    if source is None or not source.per_question:
        return items, source
    if not hasattr(train, "items"):
        raise ConfigError(f"{dataset.name!r} has per-question subgraphs: pass train= as a Dataset "
                          "(load_dataset(name, split='train')), not a list of items.")
    return items, QuestionKGs.of(train)


def _fit_kgqa_knowledge(name: str, config: CompactConfig, items: Sequence, embedder=None) -> RelationKnowledge:
    if name == "lexicon":
        return LiftLexicon(threshold=config.lift_threshold or max(config.threshold_grid), min_count=config.min_pair_count,
                           iterations=config.align_iterations).fit(items)
    if name == "hybrid":
        return HybridKnowledge(embedder, threshold=config.lift_threshold or max(config.threshold_grid),
                               min_count=config.min_pair_count, iterations=config.align_iterations,
                               k=config.knn_k).fit(items)
    return KNNVote(embedder, k=config.knn_k).fit(items)


def _gate_from_validation(val_records: Sequence[dict], config: CompactConfig) -> GateChoice:
    """The gate chosen on validation ('auto'), or the named gate with its validation precision/coverage."""
    if config.gate == "auto":
        return choose_gate(val_records, config.gate_precision)
    table = choose_gate(val_records, config.gate_precision).table if val_records else ()
    row = next((r for r in table if r["gate"] == config.gate), {})
    return GateChoice(config.gate, row.get("precision", float("nan")), row.get("coverage", float("nan")),
                      config.gate_precision, len(val_records), table)


# ----------------------------------------------------------------------------- the method
class Compact(Method):
    """Compact relation selection for one dataset (KG questions or kinship stories).

    `Compact.prepare(config, dataset, llm=None)` fits the relation knowledge on the training split and
    chooses threshold and gate on its validation part; `run(items, recorder=None, progress=True)`
    derives, builds the top-k baseline and lets the LLM read each context (`config.context`); with
    `config.reader=False` no LLM is called (prompt tokens are counted when a token counter is given).
    `llm=None`: the config's preset, loaded on first use.
    """

    name = "compact"
    notebook = "02_compact_relations.ipynb"
    config_class = CompactConfig
    record_type = CompactRecord
    headline = Headline(((HITS1, CONTAINMENT),), variant="LLM reads compact facts")
    color = "#d95f02"
    label = "compact relation selection"

    def __init__(self, config: CompactConfig, kind: str, knowledge: RelationKnowledge, kg=None, rules=None,
                 gate: GateChoice | None = None, topic_policy: str = "exclude_end", tuning: dict | None = None,
                 embedder=None, token_counter=None, graphs: QuestionKGs | None = None,
                 functional_names: Sequence[str] | None = None, llm=None):
        if not isinstance(config, CompactConfig):
            raise ConfigError("Compact(config, kind, knowledge, ...): the config comes first (see docs/MIGRATION.md).")
        self._llm = llm
        if kind not in ("kgqa", "kinship"):
            raise ConfigError(f"compact relation selection reads KG questions or kinship stories, not {kind!r} datasets.")
        self.kind = kind
        self.config = config
        self.knowledge = knowledge
        self.kg = kg
        self.source = graphs if graphs is not None else (QuestionKGs(kg=kg) if kg is not None else None)
        self.functional_names = None if functional_names is None else list(functional_names)
        self.rules = rules
        self.gate = gate
        self.topic_policy = topic_policy
        self.tuning = tuning or {}
        self._embedder = embedder
        self.token_counter = token_counter
        if kind == "kinship":
            self.vocabulary = sorted(set(rules.relation_to_surface.values())) if rules is not None else []

    # ------------------------------------------------------------------ preparation
    @classmethod
    def prepare(cls, config: CompactConfig | None, dataset, *, llm=None, train=None, embedder=None,
                token_counter=None) -> "Compact":
        """Fit the knowledge on the training split; tune threshold and gate on its validation part;
        refit the knowledge on the whole training split with the chosen settings."""
        if config is not None and not isinstance(config, CompactConfig):
            raise ConfigError("Compact.prepare(config, dataset): the config comes first (see docs/MIGRATION.md).")
        config = config or CompactConfig()
        if dataset.kind not in ("kgqa", "kinship"):
            raise ConfigError(f"{dataset.name!r} is a {dataset.kind} dataset: use a KG-question or kinship dataset.")
        source = QuestionKGs.of(dataset) if dataset.kind == "kgqa" else None
        items, train_source = _training_data(dataset, train, source)
        fit_items, val_items = split_validation(items, config.validation_fraction, config.seed, config.max_validation)
        tuning: dict = {"n_train": len(items), "n_fit": len(fit_items), "n_validation": len(val_items)}
        if dataset.kind == "kinship":
            if config.knowledge not in ("auto", "rules"):
                raise ConfigError(f"kinship stories are derived with the rules: set knowledge='rules' (got {config.knowledge!r}).")
            method = cls(config, "kinship", KinshipRuleKnowledge(dataset.rules).fit(fit_items), rules=dataset.rules,
                         tuning=tuning, token_counter=token_counter)
        else:
            name = auto_knowledge(dataset) if config.knowledge == "auto" else config.knowledge
            if name == "rules":
                raise ConfigError("the kinship rules apply to kinship stories: use knowledge='lexicon' or 'knn' here.")
            policy, policy_table = choose_topic_policy(train_source, expand_branches(fit_items), seed=config.seed)
            tuning.update({"topic_policy": policy, "topic_policy_table": policy_table, "kg": source.describe()})
            functional = None
            if source.per_question:  # one subgraph is too small to tell functional relations: count them on training
                functional = functional_relation_names(train_source, fit_items, seed=config.seed)
                tuning["functional_relations"] = functional
            if name in ("knn", "hybrid") and embedder is None:
                from ...embeddings import load_embedder

                embedder = load_embedder(config.embedder)
            knowledge = _fit_kgqa_knowledge(name, config, fit_items, embedder)
            if name in ("lexicon", "hybrid"):
                if config.lift_threshold:
                    tuning.update({"threshold": config.lift_threshold, "threshold_source": "given"})
                else:
                    th, table = tune_lift_threshold(knowledge, expand_branches(val_items), train_source,
                                                    config.threshold_grid, config.max_candidates, policy)
                    tuning.update({"threshold": th, "threshold_source": "validation", "threshold_table": table})
            method = cls(config, "kgqa", knowledge, kg=dataset.kg, topic_policy=policy, tuning=tuning,
                         embedder=embedder, token_counter=token_counter,
                         graphs=source if source.per_question else None, functional_names=functional)
        # the gate is chosen on validation records derived with the fit-part knowledge
        val_records = method.derive_many(val_items, source=train_source) if val_items else []
        method.gate = _gate_from_validation(val_records, config)
        for rec in val_records:  # derived before the gate existed
            rec["gate"] = gate_passes(method.gate.name, rec)
        tuning["validation_derived"] = ({"n": len(val_records), **derivation_statistics(val_records, method.kind, llm=False)}
                                        if val_records else {})
        if method.kind == "kinship":
            method.knowledge = KinshipRuleKnowledge(dataset.rules).fit(items)
        else:
            threshold = getattr(method.knowledge, "threshold", None)
            method.knowledge = _fit_kgqa_knowledge(method.knowledge.name, config.replace(lift_threshold=threshold or 0.0),
                                                   items, embedder)
        method._llm = llm
        return method

    def _known_chains(self):
        """The knowledge's training chains, computed once per fitted knowledge (it is refit in prepare)."""
        cached = getattr(self, "_known", None)
        if cached is None or cached[0] is not self.knowledge:
            cached = self._known = (self.knowledge, self.knowledge.training_chains())
        return cached[1]

    @property
    def embedder(self):
        if self._embedder is None:
            from ...embeddings import load_embedder

            self._embedder = load_embedder(self.config.embedder)
        return self._embedder

    def describe(self) -> dict:
        return {"kind": self.kind, "knowledge": self.knowledge.describe(),
                "topic_policy": self.topic_policy if self.kind == "kgqa" else None,
                "gate": self.gate.to_record() if self.gate else None, "tuning": self.tuning,
                "config": self.config.to_dict(),
                "token_counter": getattr(self.token_counter, "name", None)}

    # ------------------------------------------------------------------ derive (no LLM)
    def derive_many(self, items: Sequence, source: QuestionKGs | None = None) -> list[dict]:
        """Derive records for items; `source` gives their KGs (default: the evaluated dataset's).
        A conjunctive question is proposed for once per branch (one view per topic entity)."""
        if self.kind != "kgqa":
            return [self.derive(item, None, source) for item in items]
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
        if self.kind != "kgqa":
            return self._derive_kinship(item)
        source = source or self.source
        return self._derive_kgqa(item, proposals, source.kg_for(item), per_question=source.per_question)

    def _derive_kgqa(self, q, proposals=None, kg=None, per_question: bool = False) -> dict:
        if getattr(q, "conjunctive", False):
            return self._derive_conjunctive(q, proposals, self.kg if kg is None else kg, per_question)
        cfg = self.config
        kg = self.kg if kg is None else kg
        t0 = time.perf_counter()
        topic_ids, missing = _topic_ids(kg, q.topic_entities)
        proposals = self.knowledge.propose(q) if proposals is None else proposals
        sel = select_derivable(kg, topic_ids, proposals, cfg.max_candidates, self.topic_policy)
        top = sel.proposal if sel.derivable else (proposals[0] if proposals else None)
        chain = top.chain if top is not None else None
        if sel.derivable:
            ctx = compact_context(kg, topic_ids, chain, cfg.max_facts or None, self.topic_policy)
        else:
            ctx = compact_context(kg, [], (), None)
        derived = [str(x) for x in kg.entity_names[ctx.answers]]
        functional = relation_ids(kg, self.functional_names) if self.functional_names is not None else None
        cons = kg_consistency(kg, sel, ctx.edge_ids, cfg.rival_min_score, functional)
        gold = as_chain(q.chain) if q.chain else None
        golds = gold_chains(q)
        known = self._known_chains()
        facts = kg.triples(ctx.edge_ids)
        gold_norm = set(q.answers)
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
            "derived_answers": derived[:50], "derived_support": [float(s) for s in ctx.support[:50]],
            "n_derived": len(derived),
            "derived_hits@1": hits_at_1(derived, q.answers),
            "compact_facts": [list(f) for f in facts], "n_facts": ctx.n_facts, "n_facts_full": ctx.n_facts_full,
            "capped": ctx.capped, "answers_in_context": int(ctx.answers_in_context.size),
            "compact_has_gold": bool(gold_norm & {t for f in facts for t in (f[0], f[2])}),
            "consistency": cons.to_record(), "consistent": cons.consistent,
            "seconds_derive": time.perf_counter() - t0,
        }
        if per_question:
            rec["subgraph_facts"] = int(kg.num_edges)
        rec["derived_correct"] = bool(rec["derived_hits@1"] == 1.0)
        rec["gate"] = gate_passes(self.gate.name, rec) if self.gate is not None else False
        return rec

    def _derive_conjunctive(self, q, proposals=None, kg=None, per_question: bool = False) -> dict:
        """Derive each branch's chain from its topic and intersect (see conjunctive.py); the record has
        the single-chain keys (chains joined by ' * ') plus `branches`, one entry per branch."""
        cfg = self.config
        t0 = time.perf_counter()
        views = branch_views(q)
        if proposals is None:
            proposals = [self.knowledge.propose(v) for v in views]
        topics = [_topic_ids(kg, v.topic_entities) for v in views]
        sels, meet = select_conjunctive(kg, [t[0] for t in topics], proposals, cfg.max_candidates, self.topic_policy)
        derivable = bool(meet.size)
        tops = [sel.proposal if derivable else (props[0] if props else None) for sel, props in zip(sels, proposals)]
        chains = [top.chain if top is not None else None for top in tops]
        if derivable:
            ctx = conjunctive_context(kg, [t[0] for t in topics], chains, cfg.max_facts or None, self.topic_policy)
        else:
            ctx = compact_context(kg, [], (), None)
        derived = [str(x) for x in kg.entity_names[ctx.answers]]
        functional = relation_ids(kg, self.functional_names) if self.functional_names is not None else None
        reports = [kg_consistency(kg, sel, ctx.edge_ids if b == 0 else [], cfg.rival_min_score, functional)
                   for b, sel in enumerate(sels)]  # functional conflicts once, over the whole context
        cons = ConsistencyReport({k: any(r.applicable[k] for r in reports) for k in reports[0].applicable},
                                 {k: [c for r in reports for c in r.conflicts[k]] for k in reports[0].conflicts})
        known = self._known_chains()
        golds = [gold_chains(v) for v in views]
        correct = [(c in g) if g else None for c, g in zip(chains, golds)]
        sources = [top.source if top is not None else None for top in tops]
        facts = kg.triples(ctx.edge_ids)
        gold_norm = set(q.answers)
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
            "derived_answers": derived[:50], "derived_support": [float(x) for x in ctx.support[:50]],
            "n_derived": len(derived),
            "derived_hits@1": hits_at_1(derived, q.answers),
            "compact_facts": [list(f) for f in facts], "n_facts": ctx.n_facts, "n_facts_full": ctx.n_facts_full,
            "capped": ctx.capped, "answers_in_context": int(ctx.answers_in_context.size),
            "compact_has_gold": bool(gold_norm & {t for f in facts for t in (f[0], f[2])}),
            "consistency": cons.to_record(), "consistent": cons.consistent,
            "seconds_derive": time.perf_counter() - t0,
        }
        if per_question:
            rec["subgraph_facts"] = int(kg.num_edges)
        rec["derived_correct"] = bool(rec["derived_hits@1"] == 1.0)
        rec["gate"] = gate_passes(self.gate.name, rec) if self.gate is not None else False
        return rec

    def _derive_kinship(self, story) -> dict:
        t0 = time.perf_counter()
        d = self.knowledge.derive(story)
        x, y = story.query
        graph = story_graph(story, self.rules)
        relation = d.ranked[0] if d.ranked else None
        gender = story.genders.get(y, "")
        answer = self.rules.surface(relation, gender) if relation else None
        target_rel = self.rules.relation_of(story.target)
        path = d.paths[0] if d.paths else []
        facts = kinship_facts(graph, path)
        cons = kinship_consistency(d)
        rec = {
            "id": story.sid, "query": [x, y], "target": story.target, "target_relation": target_rel,
            "chain_length": story.chain_length, "knowledge": self.knowledge.name,
            "path_relations": [step[1] for step in path], "n_paths": len(d.paths),
            "candidates": {r: int(n) for r, n in d.candidates.items()}, "prior": d.prior,
            "derived_relation": relation, "derived_answers": [answer] if answer else [],
            "n_derived": len(d.candidates), "derivable": d.derivable,
            "derived_correct": bool(answer is not None and answer == story.target),
            "relation_correct": bool(relation is not None and relation == target_rel),
            "ambiguous_spans": d.ambiguous_spans,
            "compact_facts": [list(f) for f in facts], "n_facts": len(facts), "n_story_facts": len(graph.surface),
            "consistency": cons.to_record(), "consistent": cons.consistent,
            "unknown_words": graph.unknown, "seconds_derive": time.perf_counter() - t0,
        }
        rec["derived_hits@1"] = float(rec["derived_correct"])
        rec["gate"] = gate_passes(self.gate.name, rec) if self.gate is not None else False
        return rec

    # ------------------------------------------------------------------ baseline context
    def add_baselines(self, records: list[dict], items: Sequence, progress: bool | None = None) -> list[dict]:
        """Attach the baseline context: top-k facts by similarity (KG; one embedding pass for all
        items) or the whole story (kinship). Also records whether the baseline context still
        holds a derivation of the predicted chain, and whether it mentions a gold answer."""
        if self.kind == "kinship":
            for rec, item in zip(records, items):
                rec.update({"baseline_kind": "story", "topk_n_facts": len(item.edges)})
            return records
        kgs = [self.source.kg_for(it) for it in items]
        topics = [_topic_ids(kg, it.topic_entities)[0] for kg, it in zip(kgs, items)]
        questions = [it.meta.get("question_plain") or it.question for it in items]
        if self.source.per_question:  # the question's whole released subgraph is the pool (what SubgraphRAG ranks)
            ranked = topk_contexts_per_question(kgs, questions, topics, self.embedder, k=self.config.top_k,
                                                pool=self.config.baseline_pool, progress=progress)
        else:
            radius = [max(int(it.hops), self.config.baseline_hops) for it in items]
            ranked = topk_contexts(self.kg, questions, topics, radius, self.embedder,
                                   k=self.config.top_k, pool=self.config.baseline_pool, progress=progress)
        for rec, item, rf, kg in zip(records, items, ranked, kgs):
            facts = kg.triples(rf.edge_ids)
            if rec.get("derivable") and rec.get("branches"):  # conjunctive: every branch, intersected
                sets = [set(context_derivation(kg, [b["topic"]], [(r, bool(f)) for r, f in b["chain_steps"]],
                                               rf.edge_ids, self.topic_policy)) for b in rec["branches"]]
                derived = sorted(set.intersection(*sets)) if sets else []
            else:
                chain = [(r, bool(f)) for r, f in rec.get("chain_steps", [])]
                derived = (context_derivation(kg, item.topic_entities, chain, rf.edge_ids, self.topic_policy)
                           if rec.get("derivable") else [])
            rec.update({"baseline_kind": f"top{self.config.top_k}", "topk_facts": [list(f) for f in facts],
                        "topk_scores": [round(float(x), 4) for x in rf.scores],
                        "topk_n_facts": rf.n_facts, "topk_pool": rf.pool_size,
                        "topk_has_gold": bool(set(item.answers) & {t for f in facts for t in (f[0], f[2])}),
                        "topk_derivable": bool(derived)})
        return records

    # ------------------------------------------------------------------ prompts and the reader
    def prompt(self, record: dict, item, context: str) -> str:
        if self.kind == "kgqa":
            facts = record["compact_facts"] if context == "compact" else record.get("topk_facts", [])
            return kgqa_prompt(item.question, [tuple(f) for f in facts], form=self.prompt_form)
        x, y = item.query
        if context == "compact":
            body = [kinship_sentence(*f) for f in record["compact_facts"]]
        else:
            body = item.story.replace("[", "").replace("]", "")
        return kinship_prompt(x, y, body, self.vocabulary, form=self.prompt_form)

    #: "text" (the paper's reply line) or "json" (set by `answer` when the LLM decodes under schemas)
    prompt_form = "text"

    def count_prompt_tokens(self, records: list[dict], items: Sequence, contexts: Sequence[str]) -> None:
        """Prompt tokens of each context by the token counter (no model needed)."""
        if self.token_counter is None:
            return
        for rec, item in zip(records, items):
            for ctx in contexts:
                rec[f"prompt_tokens_{ctx}"] = self.token_counter(self.prompt(rec, item, ctx))

    def answer(self, records: list[dict], items: Sequence, llm, contexts: Sequence[str]) -> None:
        """The LLM reads each context; parse, score, and apply the gate."""
        self.prompt_form = "json" if wants_schema(llm) else "text"
        schema = ANSWER_SCHEMA if self.kind == "kgqa" else kinship_schema(self.vocabulary)
        for ctx in contexts:
            prompts = [self.prompt(rec, item, ctx) for rec, item in zip(records, items)]
            results = llm.generate(prompts, max_new_tokens=self.config.reader_max_new_tokens, schema=schema)
            for rec, item, prompt, res in zip(records, items, prompts, results):
                rec[f"prompt_{ctx}"] = prompt
                rec[f"llm_{ctx}"] = res.text
                rec[f"prompt_tokens_{ctx}"] = res.prompt_tokens
                rec[f"completion_tokens_{ctx}"] = res.completion_tokens
                rec[f"cached_{ctx}"] = res.cached
                rec[f"finish_{ctx}"] = res.finish_reason
                rec["structured"] = getattr(llm, "structured", "off")
                if res.error:
                    rec[f"llm_error_{ctx}"] = res.error
                rec[f"seconds_{ctx}"] = res.seconds
                if self.kind == "kgqa":
                    facts = rec["compact_facts"] if ctx == "compact" else rec.get("topk_facts", [])
                    known = {t for f in facts for t in (f[0], f[2])}
                    parsed = parse_answers(res.text, known)
                    gold = rec["answers"]
                    rec[f"answer_{ctx}"] = parsed
                    rec[f"hits@1_{ctx}"] = hits_at_1(parsed, gold)
                    rec[f"containment_{ctx}"] = containment(res.text, gold)
                    final = rec["derived_answers"][:1] if rec["gate"] else parsed
                    rec[f"hits@1_{ctx}_gated"] = hits_at_1(final, gold)
                else:
                    word = parse_kinship_answer(res.text, self.vocabulary)
                    rec[f"answer_{ctx}"] = word
                    rec[f"hits@1_{ctx}"] = float(word == item.target)
                    rec[f"containment_{ctx}"] = containment(res.text, [item.target])
                    final = rec["derived_answers"][0] if rec["gate"] and rec["derived_answers"] else word
                    rec[f"hits@1_{ctx}_gated"] = float(final == item.target)
                rec[f"failed_{ctx}"] = not rec[f"answer_{ctx}"]
        for rec in records:  # failed in any way: the reader gave no usable answer for one of the contexts
            rec["failed"] = any(rec.get(f"failed_{ctx}") for ctx in contexts)

    # ------------------------------------------------------------------ the run (Method.run: resume, isolation, progress)
    def _run_batch(self, batch: Sequence) -> list[dict]:
        """Derive, build the baseline, let the LLM read each context (or count prompt tokens without a reader)."""
        contexts = self.config.contexts()
        records = self.derive_many(batch)
        for rec in records:
            rec["kind"] = self.kind
        if "topk" in contexts:
            self.add_baselines(records, batch, progress=False)
        if self.config.reader:
            self.answer(records, batch, self.llm, contexts)
        else:
            self.count_prompt_tokens(records, batch, contexts)
        return records

    def error_fields(self) -> dict:
        if self.kind == "kinship":
            return {"kind": lambda s: "kinship", "target": lambda s: s.target, "chain_length": lambda s: s.chain_length}
        return {"kind": lambda q: "kgqa", "question": lambda q: q.question, "answers": lambda q: list(q.answers),
                "answerable": lambda q: q.answerable, "hops": lambda q: q.hops}


