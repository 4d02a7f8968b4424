"""SimGRAG end to end: pattern (LLM, oracle or a copied demonstration) -> top-k subgraphs by GSD -> answer (LLM), one record per question.

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
from typing import TYPE_CHECKING, Sequence

from ...datasets.registry import dataset_traits
from ...datasets.traits import DatasetTraits
from ...errors import ConfigError
from ...llm.structured import wants_schema
from ...metrics import ACCURACY, CONTAINMENT, HITS1
from ..base import Method
from ..scoring import Headline
from .config import SimGRAGConfig, resolve_task
from .prompts import build_pattern_prompt
from .record import STAGES, SimGRAGRecord
from .stages.demos import default_pool, demo_shots, requested_answer_demos, requested_demos, shots_of
from .stages.gsd_search import GSDRetriever, SearchResult
from .stages.pattern import (PATTERN_SCHEMA, RELATION_VOCABULARY_MAX, Pattern, anchored_pattern_schema, pattern_family,
                             pattern_schema)
from .stages.steps import SimGRAGStages

if TYPE_CHECKING:  # pragma: no cover
    from ...kg import KG
    from ...llm import LLM

__all__ = ["SimGRAG", "STAGES", "task_and_family"]


def task_and_family(config: SimGRAGConfig, traits: DatasetTraits, kg: "KG") -> tuple[str, str]:
    """(task, few-shot family) of a run: the config's, else the dataset's (its traits; the family from its KG's
    relations where the dataset names none; claims for verification)."""
    task = resolve_task(config.task, traits)
    family = config.family or ("claims" if task == "verify" else
                               pattern_family(traits.shot_family, kg.relation_names.tolist()))
    return task, family



class SimGRAG(SimGRAGStages, Method):
    """The three stages over one KG: `SimGRAG(config, kg, retriever, llm=None)`, or `SimGRAG.prepare(config,
    dataset)` which embeds and indexes the KG. `llm=None`: the config's preset, loaded on first use (the
    "fake" preset replays the gold patterns of the prepared dataset's questions: plumbing only). With
    `pattern_source="oracle"` or `"copied"` and `reader=False` no LLM is needed (retrieval only)."""

    name = "simgrag"
    notebook = "01_simgrag.ipynb"
    config_class = SimGRAGConfig
    record_type = SimGRAGRecord
    headline = Headline(((HITS1, CONTAINMENT), (ACCURACY, CONTAINMENT)))
    color = "#1b9e77"
    label = "SimGRAG"
    kinds = {"kgqa": ""}  # KG questions and claims (`Method.reader_for`; the task follows `dataset.traits.task`)

    def __init__(self, config: SimGRAGConfig | None = None, kg: "KG | None" = None, retriever: GSDRetriever | None = None,
                 llm: "LLM | None" = None, dataset: str | None = None, demo_pool=None, *,
                 traits: DatasetTraits | None = None, demos_note: str = "", fake_items: Sequence = ()):
        if config is not None and not isinstance(config, SimGRAGConfig):
            raise ConfigError("SimGRAG(config, kg, retriever, llm=None, dataset=None): the config comes first "
                              "(see docs/MIGRATION.md).")
        if kg is None or retriever is None:
            raise ConfigError("SimGRAG needs a KG and a GSDRetriever: use SimGRAG.prepare(config, dataset).")
        self.config = config or SimGRAGConfig()
        if self.config.relation_aliases and not getattr(retriever, "relation_aliases", None):
            raise ConfigError(f"relation_aliases={self.config.relation_aliases!r}, but the retriever has none: build the "
                              "method with SimGRAG.prepare(config, dataset), or call retriever.set_relation_aliases().")
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
        cls.reader_for(dataset)  # refuses a dataset kind SimGRAG does not read
        retriever = GSDRetriever.from_embedder(dataset.kg, embedder or config.embedder, progress=progress,
                                               entity_types=dataset.info.get("entity_types"))
        if config.relation_aliases:  # the KG's relations also by the words training questions use for them
            from ...relation_aliases import aliases_for

            retriever.set_relation_aliases(aliases_for(dataset, config.relation_aliases, dataset.kg.relation_names))
        from ...embeddings import load_embedder

        emb = embedder or config.embedder
        _, family = task_and_family(config, dataset.traits, dataset.kg)
        pool, note = default_pool(config, dataset, load_embedder(emb) if isinstance(emb, str) else emb, family)
        return cls(config, dataset.kg, retriever, llm, dataset=dataset.name, demo_pool=pool, traits=dataset.traits,
                   demos_note=note, fake_items=dataset.items)

    def _load_llm(self):
        if self.config.llm_preset == "fake":
            from .stages.replay import replay_gold_llm

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
                          self.config.demo_type_margin, self.config.demo_wording)

    def run_order(self, items: list) -> list:
        """With nearest demonstrations, the questions sorted by their chosen demonstrations (as the prompt lists them,
        then the question): questions that share demonstrations come one after another, so llama.cpp prefills only
        what differs from the previous prompt (docs/CPU.md#prefill). Otherwise the sample's order."""
        if self.demos_mode != "nearest" or self.config.pattern_source != "llm" or self.demo_pool is None:
            return items
        return sorted(items, key=self._prompt_order_key)

    def _prompt_order_key(self, item) -> tuple:
        try:
            demos, _ = self.pattern_demos(item)
        except Exception:  # noqa: BLE001 - its error is recorded when the question runs; here it only goes last
            return (1, (), "")
        return (0, tuple(d["question"] for d in demos), str(item.question))

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



