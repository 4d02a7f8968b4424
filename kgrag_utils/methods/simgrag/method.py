"""SimGRAG end to end: pattern (LLM or oracle) -> top-k subgraphs by GSD -> answer (LLM), one record per question.

Each record keeps every intermediate artifact (prompts, raw outputs, parsed and validated
pattern, candidates, subgraphs with GSD terms, answers), the scores (strict Hits@1 and lenient
containment), stage timings, tokens, and which stage failed:

* "pattern"    - the pattern could not be parsed or validated, or it retrieved no gold answer
                 while the gold (oracle) pattern does;
* "retrieval"  - no top-k subgraph holds a gold answer, and the gold pattern's subgraphs do not either
                 (or there is no gold chain to tell);
* "generation" - the evidence holds a gold answer but the model's answer is wrong.

`failed` marks system failures (no usable pattern, no evidence, empty answer): they count as wrong
and are counted separately (`n_failed`), never dropped.

Fact verification (FactKG; `task="verify"`, chosen automatically where the dataset's task is "verify"): the claim
takes the question's place, the pattern comes from the claim (the `claims` few-shot family), the
evidence goes to a verification prompt and the verdict is parsed as "True" / "False". Scores:
`hits@1` is then accuracy (the verdict equals the label exactly); `containment` is the reference
code's lenient check (the label's text appears in the reply). A claim whose retrieval finds nothing
is still verified, with an empty evidence list, as in the reference. Without gold patterns the
stage blame is: "pattern" (unusable pattern), "retrieval" (the evidence misses one of the claim's
entities: a retrieval or a pattern error), else "generation".
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Iterable, Sequence


from ...datasets.registry import dataset_traits
from ...datasets.traits import DatasetTraits
from ...errors import ConfigError
from ...metrics import ACCURACY, CONTAINMENT, HITS1, containment, hits_at_1, normalize_answer
from ...llm.structured import wants_schema
from .stages.generate import ANSWER_SCHEMA, evidence_lines, parse_answer, parse_verdict
from .prompts import build_answer_prompt, build_verify_prompt
from ..base import Method
from .config import SimGRAGConfig, resolve_task
from .stages.gsd_search import GSDRetriever, SearchResult
from .stages.oracle import oracle_pattern
from .stages.demos import default_pool, demo_shots, requested_answer_demos, requested_demos, shots_of
from .stages.samples import merge_samples
from .record import STAGES, SimGRAGRecord
from ..scoring import Headline
from .stages.pattern import PATTERN_SCHEMA, RELATION_VOCABULARY_MAX, Pattern, anchored_pattern_schema, marked_entities, pattern_schema, parse_pattern_output, pattern_family, validate_pattern
from .prompts import build_pattern_prompt

if TYPE_CHECKING:  # pragma: no cover
    from ...kg import KG
    from ...llm import LLM

__all__ = ["SimGRAG", "replay_gold_llm", "STAGES"]


def task_and_family(config: SimGRAGConfig, traits: DatasetTraits, kg: "KG") -> tuple[str, str]:
    """(task, few-shot family) of a run: the config's, else the dataset's (its traits; the family from its KG's
    relations where the dataset names none; claims for verification)."""
    task = resolve_task(config.task, traits)
    family = config.family or ("claims" if task == "verify" else
                               pattern_family(traits.shot_family, kg.relation_names.tolist()))
    return task, family


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


class SimGRAG(Method):
    """The three stages over one KG: `SimGRAG(config, kg, retriever, llm=None)`, or `SimGRAG.prepare(config,
    dataset)` which embeds and indexes the KG. `llm=None`: the config's preset, loaded on first use (the
    "fake" preset replays the gold patterns of the prepared dataset's questions: plumbing only). With
    `pattern_source="oracle"` and `reader=False` no LLM is needed (retrieval only)."""

    name = "simgrag"
    notebook = "01_simgrag.ipynb"
    config_class = SimGRAGConfig
    record_type = SimGRAGRecord
    headline = Headline(((HITS1, CONTAINMENT), (ACCURACY, CONTAINMENT)))
    color = "#1b9e77"
    label = "SimGRAG"

    def __init__(self, config: SimGRAGConfig | None = None, kg: "KG | None" = None, retriever: GSDRetriever | None = None,
                 llm: "LLM | None" = None, dataset: str | None = None, demo_pool=None, *,
                 traits: DatasetTraits | None = None, demos_note: str = "", fake_items: Sequence = ()):
        if config is not None and not isinstance(config, SimGRAGConfig):
            raise ConfigError("SimGRAG(config, kg, retriever, llm=None, dataset=None): the config comes first "
                              "(see docs/MIGRATION.md).")
        if kg is None or retriever is None:
            raise ConfigError("SimGRAG needs a KG and a GSDRetriever: use SimGRAG.prepare(config, dataset).")
        self.config = config or SimGRAGConfig()
        self.kg = kg
        self.retriever = retriever
        self._llm = llm
        self._fake_items: Sequence = list(fake_items)  # the "fake" preset replays these questions' gold patterns
        self.demo_pool = demo_pool  # demos="nearest": the training questions (kgrag_utils.demos.DemoPool)
        # the pattern demonstrations used: the config's, or its preset's default where a pool could be built
        requested = requested_demos(self.config)
        chosen = bool(self.config.demos) or demo_pool is not None  # else the preset's nearest could not be built
        self.demos_mode = requested if chosen else "fixed"
        self.demos_note = demos_note or (requested if self.config.demos else f"{self.demos_mode} (the preset default)")
        # the answer prompt's: the config's, or as the patterns'
        self.answer_demos_mode = requested_answer_demos(self.config) if chosen or self.config.answer_demos else "fixed"
        self.dataset = dataset or self.config.dataset
        # the dataset's traits: given by prepare, else the registered name's (a name nobody registered: a KG's defaults)
        self.task, self.family = task_and_family(self.config, traits or dataset_traits(self.dataset), kg)

    @classmethod
    def prepare(cls, config: SimGRAGConfig, dataset, *, llm: "LLM | None" = None, embedder=None,
                progress: bool | None = None) -> "SimGRAG":
        """Embed and index the dataset's KG (the FactKG types too, for the type-candidate rule)."""
        retriever = GSDRetriever.from_embedder(dataset.kg, embedder or config.embedder, progress=progress,
                                               entity_types=dataset.info.get("entity_types"))
        from ...embeddings import load_embedder

        emb = embedder or config.embedder
        _, family = task_and_family(config, dataset.traits, dataset.kg)
        pool, note = default_pool(config, dataset, load_embedder(emb) if isinstance(emb, str) else emb, family)
        return cls(config, dataset.kg, retriever, llm, dataset=dataset.name, demo_pool=pool, traits=dataset.traits,
                   demos_note=note, fake_items=dataset.items)

    def _load_llm(self):
        if self.config.llm_preset == "fake":
            return replay_gold_llm(self._fake_items)
        return self.config.load_llm()

    def error_fields(self) -> dict:
        return {"question": lambda q: q.question, "task": lambda q: self.task, "answers_gold": lambda q: list(q.answers),
                "answerable": lambda q: q.answerable, "hops": lambda q: q.hops, "qtype": lambda q: q.qtype,
                "pattern_source": lambda q: self.config.pattern_source, "pattern_ok": lambda q: False,
                "hits@1": lambda q: 0.0, "containment": lambda q: 0.0}

    def progress_label(self) -> str:
        return f"SimGRAG ({self.config.pattern_source} patterns)"

    # -------------------------------------------------------------- single stages
    @property
    def prompt_form(self) -> str:
        """"json" when the LLM decodes under schemas (structured="schema"), else the paper's "text" form."""
        return "json" if wants_schema(self.llm) else "text"

    @property
    def relation_vocabulary(self) -> list[str] | None:
        """The KG's relation names, sorted, when `relation_vocabulary` is on in schema mode; else None.

        The KG is searched with direction="any" by default, so each relation is listed once as the KG spells it."""
        if not (self.config.relation_vocabulary and wants_schema(self.llm)):
            return None
        if getattr(self, "_relation_names", None) is None:
            self._relation_names = sorted({str(r) for r in self.kg.relation_names})
        names = self._relation_names
        if len(names) > RELATION_VOCABULARY_MAX:
            raise ConfigError(f"relation_vocabulary: the KG {self.kg.name!r} has {len(names)} relation names, more than "
                              f"{RELATION_VOCABULARY_MAX} (the prompt lists them all); set relation_vocabulary=False.")
        return names

    def pattern_demos(self, item) -> tuple[list[dict], list[float]]:
        """demos="nearest": the `shots` training questions nearest to `item` as pattern shots (nearest last) and
        their similarities; demos="fixed": none."""
        if self.demos_mode != "nearest":
            return [], []
        if self.demo_pool is None:
            raise ConfigError("demos='nearest' needs the training questions: build the method with "
                              "SimGRAG.prepare(config, dataset), or pass demo_pool=simgrag.demos.pattern_demo_pool(...).")
        return demo_shots(self.demo_pool, item, self.config.shots, self.family, self.config.demo_types,
                          self.config.demo_type_margin)

    def answer_demos(self, item) -> list[dict]:
        """Answer demonstrations "nearest": the `answer_shots` training questions nearest to `item` with the evidence their
        gold pattern retrieves and the gold answers at its answer node (nearest last; computed once per training question)."""
        if self.answer_demos_mode != "nearest" or self.task == "verify":
            return []
        if self.demo_pool is None:
            raise ConfigError("answer_demos='nearest' needs the training questions: build the method with "
                              "SimGRAG.prepare(config, dataset), or pass demo_pool=simgrag.demos.pattern_demo_pool(...).")
        from .stages.demos import answer_demo
        from .stages.generate import evidence_lines

        memo = self.__dict__.setdefault("_answer_demo_memo", {})
        out = []
        for d in self.demo_pool.nearest(item, self.config.answer_shots)[::-1]:
            if d.id not in memo:
                memo[d.id] = answer_demo(d.item, self.retrieve, self.kg, evidence_lines)
            if memo[d.id] is not None:
                out.append(memo[d.id])
        return out

    def _demo_tokens(self, chat: list[dict], n_demos: int) -> int:
        """Tokens of the chosen demonstrations' turns (their contents; the chat template adds a few per turn): the part
        of the prompt that is not shared with other questions, besides the question itself."""
        if not n_demos:
            return 0
        turns = chat[-1 - 2 * n_demos:-1]
        return int(sum(self.llm.count_tokens(m["content"]) for m in turns))

    def pattern_prompt(self, question: str, demos: Sequence[dict] = ()) -> list[dict]:
        """The pattern chat: the fixed shots (`shots` of them, or `fixed_shots` with nearest demos), then `demos`."""
        nearest = self.demos_mode == "nearest"
        return build_pattern_prompt(question, self.config.fixed_shots if nearest else self.config.shots, self.family,
                                    form=self.prompt_form, relations=self.relation_vocabulary, demos=shots_of(demos))

    def pattern_schema(self, question: str) -> dict:
        """The pattern call's schema: PATTERN_SCHEMA, with `anchor_entity` the question's anchored one, with
        `relation_vocabulary` (schema mode) the relation slot an enum of the KG's relation names."""
        rels = self.relation_vocabulary
        return anchored_pattern_schema(question, rels) if self.config.anchor_entity else pattern_schema(rels)

    def _generate_patterns(self, prompts: list, schemas: list[dict], samples: int = 1) -> list[list]:
        """One generate call per distinct schema and sample (a call has one schema), results per sample in the
        prompts' order. A question's samples follow each other, so llama.cpp's prefix cache holds its whole
        prompt for samples 1..n-1 (they cost their decoding only)."""
        s = self.config
        if not wants_schema(self.llm):  # free text: the schema is dropped anyway, keep one batched call
            schemas = [PATTERN_SCHEMA] * len(prompts)
        groups: dict[str, list[int]] = {}
        for i, sc in enumerate(schemas):
            groups.setdefault(json.dumps(sc, sort_keys=True), []).append(i)
        out: list[list] = [[None] * len(prompts) for _ in range(samples)]
        # calls in prompt-text order: questions that share chosen demonstrations follow each other (llama.cpp prefix reuse)
        for idx in sorted(groups.values(), key=lambda ix: json.dumps(prompts[ix[0]], ensure_ascii=False)):
            for sample in range(samples):  # sample 0 greedy, sample i at the sampling temperature with seed i
                gen = {"temperature": s.sample_temperature, "seed": sample} if sample else {}
                res = self.llm.generate([prompts[i] for i in idx], max_new_tokens=s.pattern_max_new_tokens,
                                        stop=("\nQuestion:",), schema=schemas[idx[0]], **gen)
                for i, r in zip(idx, res):
                    out[sample][i] = r
        return out

    def retrieve(self, pattern: Pattern) -> SearchResult:
        """Filtering + enumeration; timings (encode/search/relations/enumerate ms) on the result."""
        return self.retriever.retrieve(pattern, self.config.gsd_config())[0]

    # -------------------------------------------------------------- the run (Method.run: resume, isolation, progress)
    def _run_batch(self, questions: Sequence) -> list[dict]:
        """One batch through the stages (LLM calls batched); `config.reader=False` stops after retrieval."""
        if self.config.samples > 1:
            return self._run_sampled(questions)
        chunk = self._stages(questions)[0]
        for w in chunk:
            self._score(w, answered=self.config.reader)
        return [w.record for w in chunk]

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
                        "top1_answer": None, "top1_hit": None})
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


# ----------------------------------------------------------------------------- a test double


def replay_gold_llm(questions: Sequence, cache=False):
    """A FAKE LLM for plumbing tests and demos, never for reported numbers.

    Pattern prompts are answered with the question's gold pattern (relation names with spaces,
    as a model would write them); answer prompts with the last entity of graph [1] that the
    question does not mention. Claims (FactKG: no gold chain) get a pattern that links the claim's
    entities with the relation "related to" (or, for one entity, an UNKNOWN neighbour); verification
    prompts get "True" when the evidence has a graph [1], else "False". It sees no gold answers or labels.
    """
    import re

    from ...llm import load_llm
    from .prompts import render_pattern_answer

    gold = {}
    for q in questions:
        p = oracle_pattern(q)
        if p is not None:
            gold[q.question] = render_pattern_answer(["(replayed gold pattern)"],
                                                     [(h, r.replace("_", " "), t) for h, r, t in p.triples()])
        elif q.topic_entities:  # a claim: its entities, linked
            names = [str(e).replace("_", " ") for e in q.topic_entities]
            triples = ([(names[0], "related to", n) for n in names[1:]] if len(names) > 1
                       else [(names[0], "related to", "UNKNOWN entity 1")])
            gold[q.question] = render_pattern_answer(["(claim entities linked)"], triples)

    def respond(text: str) -> str:
        question = text.rsplit("Question:", 1)[-1].strip()
        if "\nClaim:" in text:  # a verification prompt: look at the last turn only
            last = text.rsplit("Evidence:", 1)[-1]
            return "The evidence has a graph.\nAnswer: True" if "graph [1]:" in last else "No evidence.\nAnswer: False"
        if "Evidence:" not in text:  # a pattern prompt; a question it was not prepared with: its first [X] mark
            marked = [(m, "related to", "UNKNOWN entity 1") for m in marked_entities(question)[:1]]
            return gold.get(question) or (render_pattern_answer(["(marked entity)"], marked) if marked
                                          else "Phrases:\nTriples:")
        first = next((ln for ln in reversed(text.splitlines()) if ln.startswith("graph [1]:")), "")  # not a shot's
        names = [n for fact in re.findall(r"\(([^()]*)\)", first) for n in (fact.split(", ")[0], fact.split(", ")[-1])]
        names = [n for n in names if n and n.casefold() not in question.casefold()]
        return names[-1] if names else "unknown"

    return load_llm("fake", responses=respond, cache=cache)
