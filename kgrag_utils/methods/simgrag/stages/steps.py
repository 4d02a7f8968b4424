"""SimGRAG's three stages over a batch of questions (pattern, retrieval, answer or verdict) and the scoring of each record.

`SimGRAGStages` is the part of the method class that walks a batch through the stages: `SimGRAG._run_batch`
(method.py) calls `_stages` (or `_run_sampled` for samples=n, stages/samples.py) and `_score`."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable, Sequence

from ....llm.structured import wants_schema
from ....metrics import containment, hits_at_1, normalize_answer
from ..prompts import build_answer_prompt, build_verify_prompt
from .demos import copied_pattern, demo_fields
from .generate import ANSWER_SCHEMA, evidence_lines, parse_answer, parse_verdict
from .demos import own_type_group
from .gsd_search import SearchResult
from .oracle import classify_miss, oracle_pattern
from .pattern import Pattern, marked_entities, parse_pattern_output, validate_pattern
from .samples import merge_samples


def gold_relations(used: Sequence[str] | None, gold: Pattern | None) -> bool | None:
    """Whether the top-1 subgraph's facts use exactly the gold pattern's KG relations (as a multiset; None without
    a gold pattern, False without a top-1 subgraph)."""
    if gold is None:
        return None
    return used is not None and sorted(used) == sorted(str(e.relation) for e in gold.edges)


def _gold_hit(names: Iterable[str], golds: Sequence[str]) -> bool:
    gold = {normalize_answer(g) for g in golds if normalize_answer(g)}
    return any(normalize_answer(n) in gold for n in names)


@dataclass
class _Work:
    """One question on its way through the stages."""

    q: object
    record: dict = field(default_factory=dict)
    pattern: Pattern | None = None
    result: SearchResult | None = None


class SimGRAGStages:
    """The stages of `SimGRAG` over a batch (a mixin of the method class: it reads the method's config, KG,
    retriever and LLM)."""

    def _stages(self, questions: Sequence, samples: int = 1) -> list[list[_Work]]:
        """The questions through the stages once per sample; one list of works per sample. The pattern and the
        answer calls of all samples go out together, so a question's samples share llama.cpp's prefix cache."""
        runs = [[_Work(q) for q in questions] for _ in range(samples)]
        self._patterns(runs)
        for chunk in runs:
            self._retrieval(chunk)
        if self.config.reader:
            self._answers([w for chunk in runs for w in chunk])
        return runs

    def _run_sampled(self, questions: Sequence) -> list[dict]:
        """samples=n: every question through the stages n times (samples.py), then one record by the GSD-weighted vote."""
        s = self.config
        runs = self._stages(questions, s.samples)
        seeds, temps = list(range(s.samples)), [0.0] + [s.sample_temperature] * (s.samples - 1)
        out = []
        for j in range(len(questions)):
            works = [run[j] for run in runs]
            merged = merge_samples([w.record for w in works], seeds, temps, answered=s.reader)
            rep = works[merged["sample_representative"]]
            rep.record = merged
            self._score(rep, answered=s.reader)
            out.append(rep.record)
        return out

    # -------------------------------------------------------------- stage 1
    def _patterns(self, runs: list[list[_Work]]) -> None:
        """Every sample's patterns (runs[i]: sample i's works, the same questions in the same order)."""
        s = self.config
        chunk = runs[0]
        for w in (w for run in runs for w in run):
            q = w.q
            w.record.update({
                "id": q.qid, "task": self.task, "question": q.question, "topic_entities": list(q.topic_entities),
                "answers_gold": list(q.answers), "hops": q.hops, "qtype": q.qtype,
                "answerable": q.answerable, "pattern_source": s.pattern_source,
                "gold_pattern": (oracle_pattern(q).to_dict() if oracle_pattern(q) is not None else None),
            })
        typed = self.retriever.type_index is not None
        if s.pattern_source == "copied":  # one run, as oracle patterns
            return self._copied_patterns(chunk)
        if s.pattern_source == "oracle":  # one run: samples > 1 needs LLM patterns (SimGRAGConfig)
            for w in chunk:
                p = oracle_pattern(w.q)
                check = validate_pattern(p, typed_unknowns=typed)
                w.pattern = check.pattern
                w.record.update({"pattern_prompt": None, "pattern_raw": None, "pattern_phrases": [],
                                 "pattern_triples": [list(t) for t in p.triples()] if p else [],
                                 "pattern_ok": check.ok, "pattern_error": check.error if p is not None else "no gold chain",
                                 "pattern_warnings": check.warnings,
                                 "timings": {"pattern_s": 0.0}, "tokens": {}})
            return
        chosen = [self.pattern_demos(w.q) for w in chunk]
        prompts = [self.pattern_prompt(w.q.question, demos) for w, (demos, _) in zip(chunk, chosen)]
        schemas = [self.pattern_schema(w.q.question) for w in chunk]
        per_sample = self._generate_patterns(prompts, schemas, samples=len(runs))
        for run, results in zip(runs, per_sample):
            self._record_patterns(run, prompts, results, chosen)

    def _copied_patterns(self, chunk: list[_Work]) -> None:
        """pattern_source="copied": each question's nearest demonstration (the last shown) copied perfectly onto the
        question's topic entity (`demos.copied_pattern`); the chosen demonstrations recorded as an LLM run's are."""
        typed = self.retriever.type_index is not None
        for w in chunk:
            demos, scores = self.pattern_demos(w.q)
            p = copied_pattern(w.q, demos[-1]) if demos else None
            check = validate_pattern(p, typed_unknowns=typed)
            w.pattern = check.pattern if check.ok else None
            w.record.update({"pattern_prompt": None, "pattern_raw": None, "pattern_phrases": [],
                             "pattern_triples": [list(t) for t in p.triples()] if p else [],
                             "pattern_ok": w.pattern is not None,
                             "pattern_error": check.error if p is not None else "no demonstration to copy",
                             "pattern_warnings": check.warnings, "demos": self.demos_mode,
                             "pattern_demos": [d["id"] for d in demos], "pattern_demo_scores": scores,
                             **demo_fields(w.q, demos, self.demo_pool), "timings": {"pattern_s": 0.0}, "tokens": {}})

    def _record_patterns(self, chunk: list[_Work], prompts: list, results: list, chosen: list) -> None:
        """Parse and validate one sample's pattern replies into its works' records."""
        typed = self.retriever.type_index is not None
        for w, prompt, res, (demos, scores) in zip(chunk, prompts, results, chosen):
            parsed = parse_pattern_output(res.text, w.q.question)
            check = validate_pattern(Pattern.from_triples(parsed.triples), typed_unknowns=typed) if parsed.triples else None
            w.pattern = check.pattern if check is not None and check.ok else None
            # an LLM-side failure (e.g. the prompt does not fit the context window) is the reason, stated
            error = res.error or parsed.error or (check.error if check is not None else None)
            w.record.update({
                "pattern_prompt": prompt, "pattern_raw": res.text, "pattern_phrases": parsed.phrases,
                "pattern_triples": [list(t) for t in parsed.triples],
                "pattern_ok": w.pattern is not None, "pattern_error": error,
                "pattern_warnings": check.warnings if check is not None else [],
                "pattern_finish": res.finish_reason, "structured": self.llm.structured,
                "pattern_anchored": bool(wants_schema(self.llm) and self.config.anchor_entity
                                         and marked_entities(w.q.question)),
                "pattern_relation_enum": bool(self.relation_vocabulary),
                "demos": self.demos_mode, "pattern_demos": [d["id"] for d in demos], "pattern_demo_scores": scores,
                "pattern_demo_types": [d.get("qtype") for d in demos],
                "demo_own_type": own_type_group(w.q.qtype, [d.get("qtype") for d in demos]),
                "pattern_demo_respelt": self.demo_pool.respelt(w.q) if demos and self.demo_pool is not None else None,
                "pattern_demo_tokens": self._demo_tokens(prompt, len(demos)),
                "timings": {"pattern_s": res.seconds},
                "tokens": {"pattern_prompt": res.prompt_tokens, "pattern_completion": res.completion_tokens,
                           "pattern_cached": res.cached},
            })

    # -------------------------------------------------------------- stage 2
    def _retrieval(self, chunk: list[_Work]) -> None:
        for w in chunk:
            rec = w.record
            rec["pattern"] = w.pattern.to_dict() if w.pattern is not None else None
            rec.update({"candidates": None, "subgraphs": [], "nodes_expanded": 0, "timed_out": False,
                        "top1_answer": None, "top1_hit": None, "top1_relations": None})
            if w.pattern is None:
                continue
            res = self.retrieve(w.pattern)
            w.result = res
            cand = res.candidates
            rec["candidates"] = self.retriever.describe_candidates(w.pattern, cand)
            rec["subgraphs"] = [sg.to_dict(self.kg, w.pattern) for sg in res.subgraphs]
            rec["nodes_expanded"] = res.nodes_expanded
            rec["timed_out"] = res.timed_out
            rec["timings"].update({k: v for k, v in res.timings.items() if k.endswith("_ms")})
            rec["timings"]["known_nodes"] = res.timings.get("known_nodes", 0)
            if res.best is not None:
                rec["top1_relations"] = [str(t[1]) for t in res.best.triples(self.kg)]
            if w.pattern.answer is not None and res.best is not None and w.pattern.answer in res.best.nodes:
                name = str(self.kg.entity_names[res.best.nodes[w.pattern.answer]])
                rec["top1_answer"] = name
                rec["top1_hit"] = _gold_hit([name], w.q.answers)
        if self.task == "verify":  # no gold pattern: the evidence should hold every entity of the claim
            for w in chunk:
                w.record["oracle_retrieval_hit"] = None
                w.record["retrieval_hit"] = self._covers_claim(w.result, w.q)
            return
        # the gold pattern's retrieval tells a pattern error from a retrieval error
        for w in chunk:
            gold = oracle_pattern(w.q)
            if self.config.pattern_source == "oracle":
                w.record["oracle_retrieval_hit"] = self._evidence_hit(w.result, w.q) if w.pattern is not None else None
            elif gold is not None and validate_pattern(gold).ok:
                w.record["oracle_retrieval_hit"] = self._evidence_hit(self.retrieve(validate_pattern(gold).pattern), w.q)
            else:
                w.record["oracle_retrieval_hit"] = None
            w.record["retrieval_hit"] = self._evidence_hit(w.result, w.q) if w.result is not None else False
            w.record["top1_gold_relations"] = gold_relations(w.record.get("top1_relations"), gold)
            if self.config.pattern_source == "oracle" and w.q.answerable and w.pattern is not None \
                    and not w.record["top1_hit"]:  # why retrieval alone missed (oracle.MISS_CLASSES)
                best = w.result.best
                node = int(best.nodes[w.pattern.answer]) if best is not None else None
                w.record["miss_class"] = classify_miss(self.kg, w.q, best, node)

    def _covers_claim(self, result: SearchResult | None, q) -> bool:
        """Every entity of the claim (FactKG's Entity_set) is a node of some retrieved subgraph."""
        if result is None or not result.subgraphs:
            return False
        names = {str(self.kg.entity_names[x]) for x in result.evidence_entities()}
        return all(e in names for e in q.topic_entities)

    def _evidence_hit(self, result: SearchResult | None, q) -> bool:
        if result is None:
            return False
        names = [str(self.kg.entity_names[x]) for x in result.evidence_entities()]
        return _gold_hit(names, q.answers)

    # -------------------------------------------------------------- stage 3
    def _answers(self, chunk: list[_Work]) -> None:
        if self.task == "verify":
            return self._verdicts(chunk)
        s = self.config
        ready = [w for w in chunk if w.result is not None and w.result.subgraphs]
        prompts = []
        for w in ready:
            lines = evidence_lines(self.kg, w.result.subgraphs)
            w.record["evidence"] = lines
            demos = self.answer_demos(w.q)
            w.record["answer_demos"] = [d["id"] for d in demos]
            prompts.append(build_answer_prompt(w.q.question, lines, self.family, s.answer_shots, form=self.prompt_form,
                                               demos=demos))
        results = (self.llm.generate(prompts, max_new_tokens=s.answer_max_new_tokens, schema=ANSWER_SCHEMA)
                   if prompts else [])
        for w, prompt, res in zip(ready, prompts, results):
            names = {str(self.kg.entity_names[x]) for x in w.result.evidence_entities()}
            w.record.update({"answer_prompt": prompt, "answer_raw": res.text, "answer_finish": res.finish_reason,
                             "answer_error": res.error, "answers": parse_answer(res.text, names)})
            w.record["timings"]["answer_s"] = res.seconds
            w.record["tokens"].update({"answer_prompt": res.prompt_tokens, "answer_completion": res.completion_tokens,
                                       "answer_cached": res.cached})
        self._answer_defaults(chunk)

    @staticmethod
    def _answer_defaults(chunk: list[_Work]) -> None:
        for w in chunk:
            w.record.setdefault("evidence", [])
            w.record.setdefault("answer_prompt", None)
            w.record.setdefault("answer_raw", None)
            w.record.setdefault("answers", [])

    def _verdicts(self, chunk: list[_Work]) -> None:
        """Verify each claim with a usable pattern against its evidence (possibly none) -> True / False."""
        s = self.config
        ready = [w for w in chunk if w.result is not None]
        prompts = []
        for w in ready:
            lines = evidence_lines(self.kg, w.result.subgraphs)
            w.record["evidence"] = lines
            prompts.append(build_verify_prompt(w.q.question, lines, s.answer_shots))
        results = self.llm.generate(prompts, max_new_tokens=s.answer_max_new_tokens) if prompts else []
        for w, prompt, res in zip(ready, prompts, results):
            verdict = parse_verdict(res.text)
            w.record.update({"answer_prompt": prompt, "answer_raw": res.text, "answers": [verdict] if verdict else []})
            w.record["timings"]["answer_s"] = res.seconds
            w.record["tokens"].update({"answer_prompt": res.prompt_tokens, "answer_completion": res.completion_tokens,
                                       "answer_cached": res.cached})
        self._answer_defaults(chunk)

    # -------------------------------------------------------------- scoring
    def _score(self, w: _Work, answered: bool) -> None:
        rec, golds = w.record, list(w.q.answers)
        if self.task == "verify" and answered:
            answers = rec.get("answers") or []
            rec["prediction"] = answers[0] if answers else None
            # accuracy: the label, exactly (a claim asked without its label: not scored)
            rec["hits@1"] = (1.0 if answers and answers[0] == golds[0] else 0.0) if golds else float("nan")
            rec["containment"] = containment(rec.get("answer_raw") or "", golds)  # the reference's check
        elif answered:
            answers = rec.get("answers") or []
            rec["prediction"] = answers[0] if answers else None
            rec["hits@1"] = hits_at_1(answers, golds) if answers else (0.0 if golds else float("nan"))
            rec["containment"] = containment(rec.get("answer_raw") or "", golds) if golds else float("nan")
        else:  # retrieval only: the top-1 subgraph's answer node is the prediction
            pred = rec.get("top1_answer")
            rec["prediction"] = pred
            rec["hits@1"] = hits_at_1([pred] if pred else [], golds)
            rec["containment"] = rec["hits@1"]
        if not rec["pattern_ok"]:
            reason = "pattern"
        elif not rec["subgraphs"] and not (self.task == "verify" and answered):
            reason = "retrieval"
        elif answered and not rec.get("answers"):
            reason = "generation"
        else:
            reason = None
        rec["failed"] = reason is not None
        rec["failure"] = reason
        rec["failed_stage"] = self._stage(rec, rec["hits@1"])
        rec["failed_stage_lenient"] = self._stage(rec, rec["containment"])

    @staticmethod
    def _stage(rec: dict, score: float) -> str | None:
        if score == 1.0:
            return None
        if not rec["pattern_ok"]:
            return "pattern"
        if not rec["retrieval_hit"]:
            return "pattern" if rec.get("oracle_retrieval_hit") else "retrieval"
        return "generation"
