"""What a dataset is, for the methods: the facts they used to read from its name.

A method asks the dataset (`dataset.traits`, or `dataset_traits(name)` in the registry for a name only),
never its name. Each registered dataset's spec carries its traits (`registry.DatasetSpec.traits`); a sample
or fixture dataset names its real twin (`DatasetSpec.twin`) and takes the twin's traits; a dataset nobody
registered (a user's own file) gets the defaults of its kind (`for_kind`).

    task            "qa" (answer a question) | "verify" (a claim is true or false: FactKG)
    question_style  "templated" (generated from a relation chain's wording: MetaQA, PathQuestion)
                    | "human" (written freely by people: WebQSP, CWQ)
    gold_unit       how a passage question's gold passages are matched: "pid" (title + text) | "title"
    page_key        what makes one page of a passage corpus: "passage" (one document) | "title"
                    (an article stored as several paragraphs that share its title: IIRC)
    shot_family     SimGRAG's few-shot set ("movies", "people", "claims"); "" = chosen from the KG's relations
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Literal

from ..errors import ConfigError

__all__ = ["DatasetTraits", "KIND_DEFAULTS", "for_kind"]

TASKS = ("qa", "verify")
QUESTION_STYLES = ("templated", "human")
GOLD_UNITS = ("pid", "title")
PAGE_KEYS = ("passage", "title")


@dataclass(frozen=True)
class DatasetTraits:
    """The facts about a dataset that change how a method treats it (see the module docstring)."""

    task: Literal["qa", "verify"] = "qa"
    question_style: Literal["templated", "human"] = "templated"
    gold_unit: Literal["pid", "title"] = "pid"
    page_key: Literal["passage", "title"] = "passage"
    shot_family: str = ""

    def __post_init__(self):
        for name, allowed in (("task", TASKS), ("question_style", QUESTION_STYLES), ("gold_unit", GOLD_UNITS),
                              ("page_key", PAGE_KEYS)):
            if getattr(self, name) not in allowed:
                raise ConfigError(f"dataset trait {name}={getattr(self, name)!r} is not valid: use one of {list(allowed)}.")

    def replace(self, **changes) -> "DatasetTraits":
        return dataclasses.replace(self, **changes)


#: the traits of a dataset of each kind that says nothing more about itself (a user's own dataset): questions
#: over a KG are answered (not verified) and templated; passages are whole documents matched by id
KIND_DEFAULTS: dict[str, DatasetTraits] = {
    "kgqa": DatasetTraits(),
    "kinship": DatasetTraits(),
    "passages": DatasetTraits(),
}


def for_kind(kind: str) -> DatasetTraits:
    """The default traits of a dataset kind ("kgqa", "kinship", "passages")."""
    try:
        return KIND_DEFAULTS[kind]
    except KeyError:
        raise ConfigError(f"unknown dataset kind {kind!r}: use one of {list(KIND_DEFAULTS)}.") from None
