"""Every knob of SimGRAG with its default, in one place (the notebook's parameters must equal these).

The search values follow the reference (n = m = 16 candidates per pattern node / relation, k = 3
subgraphs); the rest are this project's choices, stated beside each field.
"""

from __future__ import annotations

from typing import Literal

from ...datasets.traits import DatasetTraits
from ...demos import DEMO_POOL_NOISE, DEMO_SPELLING, DEMO_TYPE_MARGIN
from ...errors import ConfigError, did_you_mean
from ..questions import KGQuestionConfig
from .stages.gsd_search import GSDConfig

__all__ = ["SimGRAGConfig", "PATTERN_SOURCES", "WORDING_KEYS", "TASKS", "PRESET_DEMOS", "resolve_task"]

PATTERN_SOURCES = ("llm", "oracle", "copied")
#: the keys of one `demo_wording` entry (the prompt file's `demonstrations:` entries have the same)
WORDING_KEYS = ("words", "subject", "forward", "backward")
TASKS = ("auto", "qa", "verify")


#: what `demos=""` means for each LLM preset (any preset not listed: "fixed", the prompt file's shots, the paper's).
#: The two Qwen CPU presets' patterns default to nearest demonstrations: measured better than their fixed shots,
#: the 0.5B on MetaQA 2-hop (the same 200 questions; docs/DEMONSTRATIONS.md, "The 0.5B on 2-hop"), the 1.5B on
#: MetaQA 1/2/3-hop (the same questions; docs/DEMONSTRATIONS.md#results). demos="fixed" is the paper's mode.
PRESET_DEMOS = {"qwen2.5-coder-0.5b": "nearest", "qwen2.5-coder-1.5b": "nearest"}


def resolve_task(task: str, traits: DatasetTraits) -> str:
    """'qa' or 'verify': `task` unless it is 'auto', then the dataset's task (`DatasetTraits.task`: FactKG verifies)."""
    if task not in TASKS:
        raise ConfigError(f"task must be one of {TASKS}, got {task!r}.")
    return traits.task if task == "auto" else task


class SimGRAGConfig(KGQuestionConfig):
    """Everything that changes a SimGRAG run's output (recorded with the run)."""

    RENAMED = {"node_topk": "entity_topk", "rel_topk": "relation_topk",
               "pattern_max_tokens": "pattern_max_new_tokens", "answer_max_tokens": "answer_max_new_tokens"}

    dataset: str = "sample-movies-2hop"  # sample-movies-{1,2,3}hop (generated), metaqa-{1,2,3}hop, pq-{2,3}hop, factkg, fixture-factkg
    limit: int = 20  # questions evaluated (a seeded sample); 0: all
    shots: int = 8                      # query -> pattern examples: 4, 8 or 12 (the paper's ablation)
    demos: Literal["", "fixed", "nearest"] = ""  # "": the preset's; "fixed": the prompt file's shots (the paper's); "nearest": the training questions nearest to each
    demo_spelling: bool = DEMO_SPELLING  # nearest demos: misspelt question words respelt towards the training questions' before choosing (kgrag_utils.spelling)
    demo_pool_noise: Literal["", "synonym", "drop", "misspell", "rules"] = DEMO_POOL_NOISE  # nearest demos: the pool also holds this rule noise's rewrite of each training question (its gold, another noise seed than the evaluated questions', never an evaluated question: kgrag_utils.demos.rephrasings); "": the training questions only
    fixed_shots: int = 4                # nearest demos: the fixed shots kept first (shared by all questions: prefix-cached)
    demo_types: int = 1                 # nearest demos: guarantee this many question types when the nearest are ambiguous (1: off; kgrag_utils.demos.cover_types)
    demo_type_margin: float = DEMO_TYPE_MARGIN  # demo_types > 1: the similarity gap under which the nearest count as ambiguous
    demo_wording: dict[str, dict[str, str]] = {}  # nearest demos: {KG relation: {"words", "subject" (head|tail: whose name comes first), "forward", "backward" (phrases with {x})}} replacing the prompt file's demonstration wording key by key; {}: the file's
    samples: int = 1                    # patterns per question; n > 1: n-1 sampled ones, each retrieved and answered, a GSD-weighted vote
    sample_temperature: float = 0.7     # samples > 1: temperature of the sampled patterns (seeds 1..n-1; the first is greedy)
    answer_shots: int = 3               # worked examples in the answer prompt
    answer_demos: Literal["", "fixed", "nearest"] = ""  # "": as demos; "fixed": the prompt file's answer shots; "nearest": + answer_shots nearest training questions, answered from their gold evidence
    top_k: int = 3                      # subgraphs handed to the LLM
    entity_topk: int = 16               # entity candidates per known pattern node
    relation_topk: int = 16             # relation candidates per pattern relation
    pattern_source: Literal["llm", "oracle", "copied"] = "llm"  # "llm"; "oracle" (gold pattern from the gold relation chain); "copied" (the nearest demonstration's pattern copied perfectly onto the question's topic entity: no LLM)
    injective: bool = False             # True: no KG entity or fact serves two pattern nodes/edges (no walks)
    direction: Literal["any", "same"] = "any"  # "any": a pattern edge matches a fact either way; "same": only its own way
    time_limit_s: float = 2.0           # retrieval time limit per question (s); the best subgraphs found so far are kept
    family: str = ""                    # few-shot family of the pattern prompt; "": the dataset's (DatasetTraits), else from its KG's relations
    pattern_max_new_tokens: int = 160  # token limit of the pattern call
    anchor_entity: bool = False         # schema mode: the first pattern triple must name the entity the question marks in [brackets]
    relation_vocabulary: bool = False   # schema mode: each pattern relation is one of the KG's relation names (an enum; the prompt lists them)
    relation_aliases: str = ""          # "": a pattern relation is compared with the KG's relation names only (the paper's); "train": also with phrases mined from the dataset's training questions of that single relation (kgrag_utils.relation_aliases; the nearest name or alias counts); a dataset name: mined from that dataset's training split (same KG; e.g. "metaqa-1hop" for MetaQA 2/3-hop)
    answer_max_new_tokens: int = 64  # token limit of the answer (or verification) call
    task: Literal["auto", "qa", "verify"] = "auto"  # "qa", "verify" (claims -> True/False); "auto": the dataset's task (DatasetTraits: verify for FactKG)
    type_topk: int = 16                 # entity types per UNKNOWN node when a pattern names no entity (KGs with types)
    reader: bool = True                 # False: retrieval only (no answer call; the top-1 subgraph's answer node is the prediction)
    batch_size: int = 32                # questions per LLM batch (records are written after each batch; sorted by their demonstrations, neighbours share prompt prefixes: docs/CPU.md#prefill)

    def _check(self) -> None:
        if self.demo_types < 1 or not 0.0 <= float(self.demo_type_margin) <= 2.0:
            raise ConfigError(f"SimGRAGConfig.demo_types must be >= 1 (1: off) and demo_type_margin a cosine gap in "
                              f"[0, 2] (got {self.demo_types!r}, {self.demo_type_margin!r}).")
        if self.batch_size < 1 or self.shots < 0 or self.answer_shots < 0 or self.fixed_shots < 0:
            raise ConfigError(f"SimGRAGConfig: batch_size must be >= 1 and shots >= 0 (got {self.batch_size}, {self.shots}).")
        if self.samples < 1 or not self.sample_temperature > 0:
            raise ConfigError(f"SimGRAGConfig: samples must be >= 1 and sample_temperature > 0 (got {self.samples}, "
                              f"{self.sample_temperature}).")
        if self.samples > 1 and self.pattern_source != "llm":
            raise ConfigError("SimGRAGConfig: samples > 1 samples LLM patterns; set pattern_source='llm' or samples=1.")
        if self.pattern_source == "copied" and self.demos == "fixed":
            raise ConfigError("SimGRAGConfig: pattern_source='copied' copies the nearest demonstration; set "
                              "demos='nearest' (or '') or another pattern_source.")
        self._check_wording()
        self._check_aliases()
        self.gsd_config()  # validates the search parameters

    def _check_wording(self) -> None:
        for relation, entry in self.demo_wording.items():
            bad = sorted(set(entry) - set(WORDING_KEYS))
            if bad or entry.get("subject", "head") not in ("head", "tail") or not str(entry.get("words", "x")).strip():
                raise ConfigError(f"SimGRAGConfig.demo_wording[{relation!r}] = {entry!r}: its keys are {WORDING_KEYS} "
                                  "(subject 'head' or 'tail', words not empty); e.g. {'starred_actors': {'words': "
                                  "'acted in', 'subject': 'tail'}}.")
            if any("{x}" not in entry[k] for k in ("forward", "backward") if k in entry):
                raise ConfigError(f"SimGRAGConfig.demo_wording[{relation!r}]: its forward and backward phrases name "
                                  "the subject as {x} (e.g. 'movies {x} acted in').")

    def _check_aliases(self) -> None:
        if self.relation_aliases in ("", "train"):
            return
        from ...datasets.registry import dataset_names

        names = dataset_names()
        if self.relation_aliases not in names:
            tip = did_you_mean(self.relation_aliases, names)
            raise ConfigError(f"SimGRAGConfig.relation_aliases={self.relation_aliases!r}: '' (off), 'train' or a "
                              f"registered dataset to mine{f' ({tip})' if tip else ''}.")

    @property
    def needs_llm(self) -> bool:
        return self.pattern_source == "llm" or self.reader

    def gsd_config(self) -> GSDConfig:
        return GSDConfig(top_k=self.top_k, entity_topk=self.entity_topk, relation_topk=self.relation_topk,
                         injective=self.injective, direction=self.direction, time_limit_s=self.time_limit_s,
                         type_topk=self.type_topk)

