"""Fixed prompts (the same for the compact and the top-k context) and tolerant answer parsing.

The paper reads every context "under fixed prompts": only the facts change between the compact
and the baseline condition, so a difference in accuracy is the context's doing.
"""

from __future__ import annotations

import re
from typing import Iterable, Sequence

from ...parsers import parse_answer_list

__all__ = ["KGQA_INSTRUCTION", "KINSHIP_INSTRUCTION", "kgqa_prompt", "kinship_prompt", "facts_block",
           "parse_answers", "parse_kinship_answer", "plain_question"]

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


def kgqa_prompt(question: str, triples: Sequence[tuple[str, str, str]]) -> str:
    """The one prompt for a KG question: instruction, facts, question."""
    return f"{KGQA_INSTRUCTION}\n\nFacts:\n{facts_block(triples)}\n\nQuestion: {plain_question(question)}\nAnswer:"


def kinship_prompt(first: str, second: str, sentences: Sequence[str] | str, vocabulary: Iterable[str]) -> str:
    """The one prompt for a kinship query: facts (sentences or the story), then the pair."""
    body = sentences if isinstance(sentences, str) else "\n".join(sentences)
    vocab = ", ".join(sorted(set(vocabulary)))
    return (f"{KINSHIP_INSTRUCTION.format(vocabulary=vocab)}\n\nFacts:\n{body}\n\n"
            f"Question: How is {second} related to {first}? ({second} is {first}'s ...)\nAnswer:")


def parse_answers(text: str | None, known: Iterable[str] = ()) -> list[str]:
    """Answer entities from a reply (the shared parser: '|' / new lines, commas split only off
    pieces that are not known entity names)."""
    return parse_answer_list(text, known)


def parse_kinship_answer(text: str | None, vocabulary: Iterable[str]) -> str | None:
    """The first vocabulary word in the reply (longest words first, so 'grandson' beats 'son')."""
    if not text:
        return None
    low = str(text).lower()
    vocab = sorted(set(vocabulary), key=len, reverse=True)
    best = None
    for word in vocab:
        m = re.search(rf"(?<![\w-]){re.escape(word)}(?![\w-])", low)
        if m and (best is None or m.start() < best[0]):
            best = (m.start(), word)
    return best[1] if best else None
