"""Fixed prompts (the same for the compact and the top-k context) and tolerant answer parsing.

The paper reads every context "under fixed prompts": only the facts change between the compact
and the baseline condition, so a difference in accuracy is the context's doing. In the
schema-constrained mode (form="json") only the reply line changes, for both contexts alike: the answer
is `ANSWER_SCHEMA` ({"answers": [...]}) or, for kinship, one word of the vocabulary (`kinship_schema`).
"""

from __future__ import annotations

import re
from typing import Iterable, Sequence

from ...llm.structured import string_list_schema
from ...parsers import parse_answer_list

__all__ = ["KGQA_INSTRUCTION", "KINSHIP_INSTRUCTION", "kgqa_prompt", "kinship_prompt", "facts_block",
           "parse_answers", "parse_kinship_answer", "plain_question", "ANSWER_SCHEMA", "kinship_schema"]

#: the reader's answer shape for KG questions (structured="schema")
ANSWER_SCHEMA = string_list_schema("answers", max_items=10, max_length=120)
_KGQA_REPLY_TEXT = "Reply with the answer entities only, exactly as written in the facts, separated by ' | '. "
_KGQA_REPLY_JSON = ('Reply with one JSON object {"answers": [...]}: the answer entities only, exactly as written '
                    "in the facts. ")
_KINSHIP_REPLY_TEXT = "Reply with one word from this list: {vocabulary}."
_KINSHIP_REPLY_JSON = 'Reply with one JSON object {{"answer": word}}, the word taken from this list: {vocabulary}.'


def kinship_schema(vocabulary: Iterable[str]) -> dict:
    """{"answer": one word of the vocabulary} (an enum: the constrained reader cannot write another word)."""
    return {"type": "object", "properties": {"answer": {"enum": sorted(set(vocabulary))}}, "required": ["answer"],
            "additionalProperties": False}

KGQA_INSTRUCTION = (
    "Answer the question using only the facts below. Each fact is (subject, relation, object). "
    "Reply with the answer entities only, exactly as written in the facts, separated by ' | '. "
    "Do not explain."
)

KINSHIP_INSTRUCTION = (
    "Each sentence states a family relation. Work out how the second person of the question is "
    "related to the first. Reply with one word from this list: {vocabulary}. Do not explain."
)

_BRACKETS = re.compile(r"[\[\]]")


def plain_question(question: str) -> str:
    """The question without MetaQA's topic brackets, with a question mark."""
    text = " ".join(_BRACKETS.sub("", str(question)).split())
    return text if text.endswith("?") else text + "?"


def facts_block(triples: Sequence[tuple[str, str, str]]) -> str:
    return "\n".join(f"({h}, {r}, {t})" for h, r, t in triples) if triples else "(no facts)"


def kgqa_prompt(question: str, triples: Sequence[tuple[str, str, str]], form: str = "text") -> str:
    """The one prompt for a KG question: instruction, facts, question (form "json": the JSON reply line)."""
    instruction = KGQA_INSTRUCTION.replace(_KGQA_REPLY_TEXT, _KGQA_REPLY_JSON) if form == "json" else KGQA_INSTRUCTION
    return f"{instruction}\n\nFacts:\n{facts_block(triples)}\n\nQuestion: {plain_question(question)}\nAnswer:"


def kinship_prompt(first: str, second: str, sentences: Sequence[str] | str, vocabulary: Iterable[str],
                   form: str = "text") -> str:
    """The one prompt for a kinship query: facts (sentences or the story), then the pair."""
    body = sentences if isinstance(sentences, str) else "\n".join(sentences)
    vocab = ", ".join(sorted(set(vocabulary)))
    template = KINSHIP_INSTRUCTION.replace(_KINSHIP_REPLY_TEXT, _KINSHIP_REPLY_JSON) if form == "json" else KINSHIP_INSTRUCTION
    return (f"{template.format(vocabulary=vocab)}\n\nFacts:\n{body}\n\n"
            f"Question: How is {second} related to {first}? ({second} is {first}'s ...)\nAnswer:")


def parse_answers(text: str | None, known: Iterable[str] = ()) -> list[str]:
    """Answer entities from a reply (the shared parser: '|' / new lines, commas split only off
    pieces that are not known entity names)."""
    return parse_answer_list(text, known)


def parse_kinship_answer(text: str | None, vocabulary: Iterable[str]) -> str | None:
    """The first vocabulary word in the reply (longest words first, so 'grandson' beats 'son')."""
    if not text:
        return None
    if str(text).lstrip().startswith("{"):  # the JSON form {"answer": word}
        from ...parsers import extract_json

        value = extract_json(str(text))
        if isinstance(value, dict) and isinstance(value.get("answer"), str):
            text = value["answer"]
    low = str(text).lower()
    vocab = sorted(set(vocabulary), key=len, reverse=True)
    best = None
    for word in vocab:
        m = re.search(rf"(?<![\w-]){re.escape(word)}(?![\w-])", low)
        if m and (best is None or m.start() < best[0]):
            best = (m.start(), word)
    return best[1] if best else None
