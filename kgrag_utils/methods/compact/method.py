"""The method end to end, as named stages that return one record per example (the stages: stages/).

    prepare  -> relation knowledge fitted on the training split; lift threshold and gate chosen on
                a held-out validation portion of it (never on the evaluated items: stages/fit.py)
    derive   -> (stages/derive.py) proposals -> derivability check -> compact facts -> derived answers -> consistency
                -> gate decision                                     (no LLM; the benchmark stops here)
    baseline -> the top-k facts by embedding similarity (KG questions) or the whole story (kinship)
    answer   -> the same LLM reads each context under the same prompt; the gate decides whether
                the derived answer replaces the LLM's

Every record keeps the intermediate artifacts (proposals with their sources, the chosen chain,
facts, derived answers, checks, gate, prompts, raw LLM output, parsed answers, tokens, scores).

A conjunctive question (several chains meeting at the answer, WC2014's WC-C) is read once per topic
entity, each branch's chain is derived from its topic and the derived answers are the intersection
(stages/conjunctive.py); relation knowledge learns from the training questions' branches the same way.

Each question is answered from its own KG as `QuestionKGs` gives it: the dataset's KG (MetaQA,
PathQuestion) or the question's released subgraph (WebQSP and CWQ as released by RoG, whose
training chains are the shortest topic-to-answer chains; see stages/graphs.py). The reader's score for
KG questions is the paper's exact match: the reply's first answer, SQuAD-normalised, equals a
gold answer (= strict Hits@1, the `hits@1_*` keys).
"""

from __future__ import annotations

from typing import ClassVar, Sequence

from ...errors import ConfigError
from ...llm.structured import wants_schema
from ...metrics import CONTAINMENT, HITS1, containment, hits_at_1
from ..base import Method
from ..scoring import Headline
from .config import CompactConfig
from .prompts import ANSWER_SCHEMA, kgqa_prompt, parse_answers
from .record import CompactRecord
from .stages.checks import context_derivation
from .stages.conjunctive import expand_branches
from .stages.context import choose_topic_policy, topk_contexts, topk_contexts_per_question
from .stages.derive import CompactDerivation
from .stages.fit import (auto_knowledge, fit_kgqa_knowledge, gate_from_validation, topic_entity_ids, training_data,
                         tune_lift_threshold)
from .stages.gate import GateChoice, gate_passes
from .stages.graphs import QuestionKGs, functional_relation_names
from .stages.knowledge import RelationKnowledge
from .stages.splits import split_validation
from .stages.statistics import derivation_statistics

__all__ = ["Compact"]


class Compact(CompactDerivation, Method):
    """Compact relation selection over KG questions (`prepare` picks `stages/kinship.py: KinshipCompact`, a
    subclass, for kinship stories).

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
    #: the class of each dataset kind (`Method.reader_for`: `prepare` picks KinshipCompact for kinship stories)
    kinds = {"kgqa": "", "kinship": "stages.kinship:KinshipCompact"}
    #: the dataset kind this class reads (KinshipCompact: "kinship"); an instance's `kind` says it too
    dataset_kind: ClassVar[str] = "kgqa"

    def __init__(self, config: CompactConfig, knowledge: RelationKnowledge, kg=None, rules=None,
                 gate: GateChoice | None = None, topic_policy: str = "exclude_end", tuning: dict | None = None,
                 embedder=None, token_counter=None, graphs: QuestionKGs | None = None,
                 functional_names: Sequence[str] | None = None, llm=None):
        if not isinstance(config, CompactConfig):
            raise ConfigError("Compact(config, knowledge, ...): the config comes first (see docs/MIGRATION.md).")
        self._llm = llm
        self.kind = self.dataset_kind  # what notebooks and benchmarks read (the class's `kind` is the registry's)
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

    # ------------------------------------------------------------------ preparation
    @classmethod
    def prepare(cls, config: CompactConfig | None, dataset, *, llm=None, train=None, embedder=None,
                token_counter=None) -> "Compact":
        """Fit the knowledge on the training split; tune threshold and gate on its validation part;
        refit the knowledge on the whole training split with the chosen settings."""
        if config is not None and not isinstance(config, CompactConfig):
            raise ConfigError("Compact.prepare(config, dataset): the config comes first (see docs/MIGRATION.md).")
        config = config or CompactConfig()
        reader = cls.reader_for(dataset)  # Compact, or KinshipCompact for kinship stories (`kinds`)
        source = reader.question_kgs(dataset)
        items, train_source = training_data(dataset, train, source)
        fit_items, val_items = split_validation(items, config.validation_fraction, config.seed, config.max_validation)
        tuning: dict = {"n_train": len(items), "n_fit": len(fit_items), "n_validation": len(val_items)}
        fit_knowledge, built = reader.fit_knowledge(config, dataset, source, fit_items, val_items, train_source, tuning,
                                                    embedder)
        built["token_counter"] = token_counter
        # the gate is chosen on validation records derived with the fit-part knowledge (by a probe, never returned)
        probe = reader(config, fit_knowledge, **built)
        val_records = probe.derive_many(val_items, source=train_source) if val_items else []
        gate = gate_from_validation(val_records, config)
        for rec in val_records:  # derived before the gate existed
            rec["gate"] = gate_passes(gate.name, rec)
        tuning["validation_derived"] = ({"n": len(val_records),
                                         **derivation_statistics(val_records, reader.dataset_kind, llm=False)}
                                        if val_records else {})
        # the knowledge refit on the whole training split with the chosen settings
        knowledge = reader.refit_knowledge(config, dataset, fit_knowledge, items, built)
        return reader(config, knowledge, gate=gate, llm=llm, **built)

    @classmethod
    def question_kgs(cls, dataset) -> QuestionKGs | None:
        """Where each question's KG comes from: the dataset's KG or each question's released subgraph."""
        return QuestionKGs.of(dataset)

    @classmethod
    def fit_knowledge(cls, config: CompactConfig, dataset, source, fit_items, val_items, train_source, tuning: dict,
                      embedder=None) -> tuple[RelationKnowledge, dict]:
        """The relation knowledge fitted on the fit part (the lift threshold tuned on validation), and what the
        constructor needs beside it; `tuning` gets the choices made."""
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
        fit_knowledge = fit_kgqa_knowledge(name, config, fit_items, embedder)
        if name in ("lexicon", "hybrid"):
            if config.lift_threshold:
                tuning.update({"threshold": config.lift_threshold, "threshold_source": "given"})
            else:
                th, table = tune_lift_threshold(fit_knowledge, expand_branches(val_items), train_source,
                                                config.threshold_grid, config.max_candidates, policy)
                tuning.update({"threshold": th, "threshold_source": "validation", "threshold_table": table})
        return fit_knowledge, {"kg": dataset.kg, "topic_policy": policy, "tuning": tuning, "embedder": embedder,
                               "graphs": source if source.per_question else None, "functional_names": functional}

    @classmethod
    def refit_knowledge(cls, config: CompactConfig, dataset, fit_knowledge, items, built: dict) -> RelationKnowledge:
        """The knowledge refit on the whole training split with the settings chosen on the fit part."""
        threshold = getattr(fit_knowledge, "threshold", None)
        return fit_kgqa_knowledge(fit_knowledge.name, config.replace(lift_threshold=threshold or 0.0), items,
                                  built["embedder"])

    def _known_chains(self):
        """The knowledge's training chains, computed once per fitted knowledge."""
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
                "topic_policy": self.topic_policy,
                "gate": self.gate.to_record() if self.gate else None, "tuning": self.tuning,
                "config": self.config.to_dict(),
                "token_counter": getattr(self.token_counter, "name", None)}

    # ------------------------------------------------------------------ baseline context
    def add_baselines(self, records: list[dict], items: Sequence, progress: bool | None = None) -> list[dict]:
        """Attach the baseline context: top-k facts by similarity (one embedding pass for all items). Also
        records whether the baseline context still holds a derivation of the predicted chain, and whether it
        mentions a gold answer."""
        kgs = [self.source.kg_for(it) for it in items]
        topics = [topic_entity_ids(kg, it.topic_entities)[0] for kg, it in zip(kgs, items)]
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
        facts = record["compact_facts"] if context == "compact" else record.get("topk_facts", [])
        return kgqa_prompt(item.question, [tuple(f) for f in facts], form=self.prompt_form)

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
        schema = self.answer_schema()
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
                self.score_reply(rec, item, ctx, res.text)
                rec[f"failed_{ctx}"] = not rec[f"answer_{ctx}"]
        for rec in records:  # failed in any way: the reader gave no usable answer for one of the contexts
            rec["failed"] = any(rec.get(f"failed_{ctx}") for ctx in contexts)

    def answer_schema(self) -> dict:
        """The JSON schema of a reply when the LLM decodes under schemas."""
        return ANSWER_SCHEMA

    def score_reply(self, rec: dict, item, ctx: str, text: str) -> None:
        """The parsed answers of one reply and their scores (with the gate: the derived answer when it passes)."""
        facts = rec["compact_facts"] if ctx == "compact" else rec.get("topk_facts", [])
        parsed = parse_answers(text, {t for f in facts for t in (f[0], f[2])})
        gold = rec["answers"]
        rec[f"answer_{ctx}"] = parsed
        rec[f"hits@1_{ctx}"] = hits_at_1(parsed, gold)
        rec[f"containment_{ctx}"] = containment(text, gold)
        final = rec["derived_answers"][:1] if rec["gate"] else parsed
        rec[f"hits@1_{ctx}_gated"] = hits_at_1(final, gold)

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
        return {"kind": lambda q: "kgqa", "question": lambda q: q.question, "answers": lambda q: list(q.answers),
                "answerable": lambda q: q.answerable, "hops": lambda q: q.hops}


