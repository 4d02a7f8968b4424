"""Compact relation selection over kinship stories (CLUTRR): the class `Compact.prepare` picks for a kinship
dataset (`Compact.kinds`). The rules are the relation knowledge; the derivation composes the story's path
(rules.py), the baseline context is the whole story, and the reader answers with one kinship word."""

from __future__ import annotations

import time
from typing import Sequence

from ....errors import ConfigError
from ....metrics import containment
from ..method import Compact
from ..prompts import kinship_prompt, kinship_schema, parse_kinship_answer
from .checks import kinship_consistency
from .context import kinship_facts, kinship_sentence
from .gate import gate_passes
from .rules import KinshipRuleKnowledge, story_graph

__all__ = ["KinshipCompact"]


class KinshipCompact(Compact):
    """`Compact` on kinship stories: rules for knowledge, the story's derivation, the story as the baseline."""

    dataset_kind = "kinship"

    def __init__(self, config, knowledge, *, rules=None, **built):
        super().__init__(config, knowledge, rules=rules, **built)
        self.vocabulary = sorted(set(rules.relation_to_surface.values())) if rules is not None else []

    # ------------------------------------------------------------------ preparation (Compact.prepare calls these)
    @classmethod
    def question_kgs(cls, dataset) -> None:
        return None  # a story is its own graph

    @classmethod
    def fit_knowledge(cls, config, dataset, source, fit_items, val_items, train_source, tuning: dict, embedder=None):
        if config.knowledge not in ("auto", "rules"):
            raise ConfigError("kinship stories are derived with the rules: set knowledge='rules' "
                              f"(got {config.knowledge!r}).")
        return KinshipRuleKnowledge(dataset.rules).fit(fit_items), {"rules": dataset.rules, "tuning": tuning}

    @classmethod
    def refit_knowledge(cls, config, dataset, fit_knowledge, items, built: dict):
        return KinshipRuleKnowledge(dataset.rules).fit(items)

    def describe(self) -> dict:
        return {**super().describe(), "topic_policy": None}

    # ------------------------------------------------------------------ derive (no LLM)
    def derive_many(self, items: Sequence, source=None) -> list[dict]:
        return [self.derive(item) for item in items]

    def derive(self, story, proposals=None, source=None) -> dict:
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

    # ------------------------------------------------------------------ the baseline context and the reader
    def add_baselines(self, records: list[dict], items: Sequence, progress: bool | None = None) -> list[dict]:
        """The baseline context of a story is the whole story."""
        for rec, item in zip(records, items):
            rec.update({"baseline_kind": "story", "topk_n_facts": len(item.edges)})
        return records

    def prompt(self, record: dict, item, context: str) -> str:
        x, y = item.query
        if context == "compact":
            body = [kinship_sentence(*f) for f in record["compact_facts"]]
        else:
            body = item.story.replace("[", "").replace("]", "")
        return kinship_prompt(x, y, body, self.vocabulary, form=self.prompt_form)

    def answer_schema(self) -> dict:
        return kinship_schema(self.vocabulary)

    def score_reply(self, rec: dict, item, ctx: str, text: str) -> None:
        word = parse_kinship_answer(text, self.vocabulary)
        rec[f"answer_{ctx}"] = word
        rec[f"hits@1_{ctx}"] = float(word == item.target)
        rec[f"containment_{ctx}"] = containment(text, [item.target])
        final = rec["derived_answers"][0] if rec["gate"] and rec["derived_answers"] else word
        rec[f"hits@1_{ctx}_gated"] = float(final == item.target)

    def error_fields(self) -> dict:
        return {"kind": lambda s: "kinship", "target": lambda s: s.target, "chain_length": lambda s: s.chain_length}
