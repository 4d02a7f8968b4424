"""The two prompts KGP needs - the traversal agent's next evidence and the reader's short answer -
and the tolerant cleaning of what a small model writes back.

The paper's agent is a T5 fine-tuned to write the next supporting fact; with an instruction-tuned
model we ask for it directly: given the question and the passages on the path so far, write one
sentence that states the fact still needed, naming its entity. The text is never used as an
answer, only to rank real neighbouring passages.
"""

from __future__ import annotations

import re
from typing import Sequence

__all__ = ["evidence_prompt", "reader_prompt", "reader_instruction", "is_yes_no_question", "clean_evidence",
           "clean_answer", "clip"]

EVIDENCE_INSTRUCTION = (
    "Find evidence for a multi-hop question. Given the question and the passages found so far, write ONE short "
    "sentence stating the next fact needed, naming its person, place or thing (use names from the passages). "
    "Do not answer the question."
)

# Two reader instructions, chosen by the question's form. One instruction that mentioned yes/no for every
# question (version 1, yesterday's LLM runs) made the 0.5B model answer "Yes" to 53 of 95 wh-questions.
READER_INSTRUCTION = ("Answer the question with the name, date, number or short phrase from the passages that "
                      "answers it. Write only that answer, in a few words.")
READER_INSTRUCTION_YES_NO = "Answer the question from the passages with one word: yes or no."
READER_INSTRUCTION_V1 = ("Answer the question from the passages with a few words only (a name, date, number or short "
                         "phrase); answer yes or no to a yes/no question.")

_AUX = {"is", "are", "was", "were", "do", "does", "did", "can", "could", "has", "have", "had", "will", "would",
        "should", "shall", "may", "might", "must"}


def clip(text: str, chars: int) -> str:
    """Text cut at a word boundary to about `chars` characters (with an ellipsis when cut)."""
    text = " ".join(str(text).split())
    if len(text) <= chars:
        return text
    cut = text[:chars].rsplit(" ", 1)[0]
    return (cut or text[:chars]) + " ..."


def _evidence_task(question: str, passages: Sequence[tuple[str, str]], chars: int) -> list[str]:
    lines = [f"Question: {question}", "", "Passages found so far:"]
    for i, (title, text) in enumerate(passages, 1):
        lines.append(f"[{i}] {title}: {clip(text, chars)}")
    return lines + ["", "Next evidence needed (one sentence):"]


def evidence_prompt(question: str, passages: Sequence[tuple[str, str]], chars: int = 500,
                    demos: Sequence[dict] = ()) -> str:
    """Prompt for the next evidence; `passages` are (title, text) of the path, seed first.

    demos: finished steps ({"question", "passages", "evidence"}: the demonstrations chosen for this
    question, config demos="nearest", `demos.py`) after the instruction, so the shared part comes first."""
    lines = [EVIDENCE_INSTRUCTION, ""]
    for d in demos:
        lines += ["Example.", *_evidence_task(d["question"], d["passages"], chars)]
        lines[-1] += f" {d['evidence']}"
        lines.append("")
    lines += _evidence_task(question, passages, chars)
    return "\n".join(lines)


def is_yes_no_question(question: str) -> bool:
    """A polar question: its last sentence opens with an auxiliary verb and offers no "X or Y" choice."""
    sentences = [x for x in re.split(r"(?<=[.?!])\s+", " ".join(str(question).split())) if x]
    if not sentences:
        return False
    last = sentences[-1]
    words = last.split()
    return words[0].lower().strip(",") in _AUX and " or " not in f" {last.lower()} "


def reader_instruction(question: str) -> str:
    return READER_INSTRUCTION_YES_NO if is_yes_no_question(question) else READER_INSTRUCTION


#: the reader's answer shape (structured="schema"); a polar question's answer is "yes" or "no"
READER_SCHEMA = {"type": "object", "properties": {"answer": {"type": "string", "minLength": 1, "maxLength": 80}},
                 "required": ["answer"], "additionalProperties": False}
READER_SCHEMA_YES_NO = {"type": "object", "properties": {"answer": {"enum": ["yes", "no"]}},
                        "required": ["answer"], "additionalProperties": False}
READER_REPLY_JSON = 'Reply with one JSON object {"answer": "..."}.'


def reader_schema(question: str) -> dict:
    return READER_SCHEMA_YES_NO if is_yes_no_question(question) else READER_SCHEMA


def reader_prompt(question: str, passages: Sequence[tuple[str, str]], chars: int = 300, form: str = "text") -> str:
    """The reader's prompt; form="json" (schema-constrained mode) adds the JSON reply line, nothing else changes.

    The next-evidence prompt of the traversal agent stays free text in both modes (one short line
    that is compared with passages by TF-IDF; a schema would only wrap it in quotes)."""
    instruction = reader_instruction(question) + (f" {READER_REPLY_JSON}" if form == "json" else "")
    lines = [instruction, "", "Passages:"]
    for i, (title, text) in enumerate(passages, 1):
        lines.append(f"[{i}] {title}: {clip(text, chars)}")
    lines += ["", f"Question: {question}", "Answer:"]
    return "\n".join(lines)


_LABEL = re.compile(r"^\s*(?:\*\*)?\s*(?:next\s+evidence(?:\s+needed)?|evidence|answer|final answer)\s*(?:\(.*?\))?\s*[:\-]\s*(?:\*\*)?\s*",
                    re.IGNORECASE)
_FENCE = re.compile(r"^```\w*\s*|\s*```$")


def _first_line(text: str) -> str:
    text = _FENCE.sub("", str(text or "").strip())
    for line in text.splitlines():
        line = line.strip()
        if line and not set(line) <= set("`*-#=_ "):
            return line
    return ""


def clean_evidence(text: str) -> str:
    """The first non-empty line without a label such as 'Next evidence:' or quotes ('' when none)."""
    line = _LABEL.sub("", _first_line(text)).strip()
    return line.strip("\"'` ").strip()


def clean_answer(text: str) -> str:
    """The reader's answer: the first line, labels, quotes, bullets and a final full stop removed
    (the JSON form {"answer": "..."} gives its answer)."""
    if str(text or "").lstrip().startswith("{"):
        from ...parsers import extract_json

        value = extract_json(str(text))
        if isinstance(value, dict) and isinstance(value.get("answer"), (str, int, float)):
            text = str(value["answer"])
    line = _LABEL.sub("", _first_line(text)).strip()
    line = re.sub(r"^[\-\*\u2022]\s*", "", line)
    line = line.strip("\"'` ").strip()
    if line.endswith(".") and not re.search(r"\b[A-Z]\.$", line):
        line = line[:-1].rstrip()
    return line
