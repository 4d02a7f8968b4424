"""The three prompts this method sends, written for this project (examples invented, none from a benchmark).

* query entities: few-shot chat, the answer is a JSON list of strings;
* rerank: one-shot chat (instructions + example, the example's answer, then the task), the answer
  is JSON {"reasoning": ..., "ids": [...]} with the ids of the useful relations in order. With
  Qwen2.5-Coder-0.5B the reasoning often loops until the token limit (35 of the first 65 MuSiQue
  questions), so the parser also reads `[k]` marks and restated facts in the reasoning. Putting
  the ids first was tried on 6 of those questions: the model then counted 1, 2, 3, ... through
  every candidate (no choice at all), so the reasoning stays first (and the schema keeps that order:
  until vr-3 the grammar wrote the ids first, and the 1.5B counted). Repeating the question after
  the facts was tried on MuSiQue and not kept (docs/RESULTS.md#vector-rerank-fill); passage titles after the
  facts (config candidate_titles) are off: the 1.5B copied them into its capped reasoning
  (docs/RESULTS.md#vector-rerank-titles);
* OpenIE: few-shot chat, the answer is a JSON list of [subject, predicate, object] lists.

Each builder returns a chat (list of {role, content}) for `llm.generate`. Changing any text here
changes the LLM cache keys, so cached answers never leak across prompt versions.

Answer shapes (structured="schema"): ENTITY_SCHEMA, RERANK_SCHEMA, OPENIE_SCHEMA, ANSWER_SCHEMA. The
entity, rerank and OpenIE prompts already ask for JSON and their examples show it, so schema mode
changes only the decoding (the reasoning is capped at 200 characters, which stops the loops that
ran into the token limit); the KG-question answer prompt shows its example as {"answers": [...]}.
"""

from __future__ import annotations

import json
from typing import Sequence

from ...text_table import table_rows

__all__ = ["entity_prompt", "rerank_prompt", "openie_prompt", "answer_prompt", "format_candidates", "PROMPT_VERSION",
           "DEMO_ANSWER_VERSION", "OPENIE_PROMPT_VERSION", "ANSWER_PROMPT_VERSION", "ENTITY_SCHEMA", "RERANK_SCHEMA", "OPENIE_SCHEMA", "ANSWER_SCHEMA"]

#: query entities: a short list of names copied from the question
ENTITY_SCHEMA = {"type": "array", "items": {"type": "string", "minLength": 1, "maxLength": 80}, "maxItems": 6}
#: rerank: a short reasoning (capped: 0.5B models loop in it), then the chosen fact numbers
RERANK_SCHEMA = {"type": "object",
                 "properties": {"reasoning": {"type": "string", "maxLength": 200},
                                "ids": {"type": "array", "items": {"type": "integer", "minimum": 1}, "maxItems": 10}},
                 "required": ["reasoning", "ids"], "additionalProperties": False}
#: OpenIE: [subject, predicate, object] triples
OPENIE_SCHEMA = {"type": "array", "maxItems": 24,
                 "items": {"type": "array", "minItems": 3, "maxItems": 3,
                           "items": {"type": "string", "minLength": 1, "maxLength": 80}}}
#: the KG-question answer: names copied from the facts
ANSWER_SCHEMA = {"type": "object",
                 "properties": {"answers": {"type": "array", "items": {"type": "string", "minLength": 1, "maxLength": 120},
                                            "maxItems": 10}},
                 "required": ["answers"], "additionalProperties": False}

#: vr-3: the rerank schema's properties keep their order, reasoning then ids (under vr-2 the grammar wrote the ids
#: first: llm/structured.py, schema_text); the prompt texts are those of vr-2
PROMPT_VERSION = "vr-3"
#: the answer a nearest demonstration shows (demos="nearest" only). demo-1 wrote one template sentence, "Facts [3], [5]
#: lead from the question's entity to its answer, one per hop.", and the 1.5B copied it with its own list's first ids,
#: [1], [2], ..., [5] (the first MuSiQue cross-fit run, docs/RESULTS.md#vector-rerank-crossfit); demo-2 reasons
#: as the fixed example does, each gold fact's words with its id
DEMO_ANSWER_VERSION = "demo-2"
#: the OpenIE prompt (unchanged since vr-2): part of the OpenIE cache's key, so extracted triples stay valid
OPENIE_PROMPT_VERSION = "vr-2"
#: the answer prompt of KG question datasets (answering from the chosen facts); versioned on its own
ANSWER_PROMPT_VERSION = "vr-answer-1"

# ---------------------------------------------------------------------------------------------- entities
_ENTITY_INSTRUCTIONS = (
    "List the named entities that the question mentions: people, places, organisations, titles of works, "
    "events, dates and numbers. Copy each one exactly as written in the question. Answer with a JSON list "
    "of strings only."
)
_ENTITY_SHOTS = (
    ("Who directed the film in which Greta Hallam played a lighthouse keeper?", ["Greta Hallam"]),
    ("In which country is the city where the Treaty of Ostmark was signed?", ["Treaty of Ostmark"]),
    ("What year did the company that makes the Velder X2 camera open its office in Lisbon?",
     ["Velder X2", "Lisbon"]),
)


def entity_prompt(question: str) -> list[dict]:
    """Few-shot chat (one user/assistant turn per example) asking for the question's entities as a JSON list.

    Chat turns rather than one block of examples: small instruct models copy the examples'
    entities less often when each example is its own turn.
    """
    chat: list[dict] = []
    for i, (q, ents) in enumerate(_ENTITY_SHOTS):
        prefix = f"{_ENTITY_INSTRUCTIONS}\n\n" if i == 0 else ""
        chat.append({"role": "user", "content": f"{prefix}Question: {q}"})
        chat.append({"role": "assistant", "content": json.dumps(ents)})
    chat.append({"role": "user", "content": f"Question: {question.strip()}"})
    return chat


# ---------------------------------------------------------------------------------------------- rerank
_RERANK_INSTRUCTIONS = (
    "Below is a question and a numbered list of facts from a knowledge graph. Choose the {n} facts that are "
    "most useful for answering the question, most useful first; a multi-hop question needs one fact per hop. "
    'Answer with JSON only: {{"reasoning": "<one or two sentences>", "ids": [<fact numbers>]}}.'
)
_RERANK_EXAMPLE_QUESTION = "When was the mother of the founder of Halvane Optics born?"
_RERANK_EXAMPLE_FACTS = (
    "Halvane Optics founded by Pieter Halvane",
    "Halvane Optics headquarters in Ostmere",
    "Pieter Halvane son of Ilse Marr",
    "Pieter Halvane born in 1931",
    "Ilse Marr born in 1904",
    "Ilse Marr occupation glassmaker",
    "Ostmere located in Aveland",
)
#: candidate_titles=True: the passage each example fact was read from (one title per fact above)
_RERANK_EXAMPLE_TITLES = ("Halvane Optics", "Halvane Optics", "Pieter Halvane", "Pieter Halvane", "Ilse Marr",
                          "Ilse Marr", "Ostmere")
_TITLES_NOTE = " Each fact ends with the title of the passage it was read from, in parentheses."
_RERANK_EXAMPLE_ANSWER = {
    "reasoning": "The founder is Pieter Halvane [1]; his mother is Ilse Marr [3]; she was born in 1904 [5].",
    "ids": [1, 3, 5, 4, 6],
}


def format_candidates(sentences: Sequence[str], start: int = 1, titles: Sequence[str] | None = None) -> str:
    """`[id] sentence` lines, ids counted from `start`; with titles, `[id] sentence (passage: title)`."""
    if titles is None:
        return "\n".join(f"[{i}] {s}" for i, s in enumerate(sentences, start=start))
    if len(titles) != len(sentences):
        raise ValueError(f"format_candidates: {len(titles)} titles for {len(sentences)} facts")
    return "\n".join(f"[{i}] {s} (passage: {t})" if t else f"[{i}] {s}"
                     for i, (s, t) in enumerate(zip(sentences, titles), start=start))


def _rerank_task(question: str, sentences: Sequence[str], n: int, titles: Sequence[str] | None = None) -> str:
    note = _TITLES_NOTE if titles is not None else ""
    return (f"{_RERANK_INSTRUCTIONS.format(n=n)}{note}\n\nQuestion: {question.strip()}\n\nFacts:\n"
            f"{format_candidates(sentences, titles=titles)}")


def _clip(text: str, chars: int) -> str:
    """`text` cut at a word boundary to at most `chars` characters."""
    if len(text) <= chars:
        return text
    cut = text[:chars].rsplit(" ", 1)[0]
    return cut if cut else text[:chars]


def _demo_answer(facts: Sequence[str], ids: Sequence[int], limit: int = 200) -> dict:
    """A demonstration's answer in the fixed example's manner: each gold fact, in hop order, with its id
    ("X founded by Y [4]; Y born in 1931 [2]."), every fact clipped so the reasoning fits the schema's cap."""
    each = max(12, (limit - 1) // max(1, len(ids)) - len(" [10]; "))
    steps = [f"{_clip(str(facts[i - 1]), each)} [{i}]" for i in ids]
    return {"reasoning": _clip("; ".join(steps), limit - 1) + ".", "ids": list(ids)}


def rerank_prompt(question: str, sentences: Sequence[str], select_n: int, demos: Sequence[dict] = (),
                  titles: Sequence[str] | None = None) -> list[dict]:
    """One-shot chat: the example task, its JSON answer, then the real task with `[id] sentence` lines.

    demos: finished tasks ({"question", "facts", "ids"}: the demonstrations chosen for this question,
    config demos="nearest", `demos.py`) between the fixed example and the task, so the shared part comes first.
    titles: config candidate_titles=True, the passage title of each fact (the fixed example shows its own); None
    leaves the prompt as it was (the default's cache keys hold)."""
    if titles is not None and demos:
        raise ValueError("rerank_prompt: titles are shown with the fixed example only (demos carry no titles)")
    example_n = len(_RERANK_EXAMPLE_ANSWER["ids"])
    example_titles = _RERANK_EXAMPLE_TITLES if titles is not None else None
    chat = [
        {"role": "user", "content": _rerank_task(_RERANK_EXAMPLE_QUESTION, _RERANK_EXAMPLE_FACTS, example_n,
                                                 example_titles)},
        {"role": "assistant", "content": json.dumps(_RERANK_EXAMPLE_ANSWER)},
    ]
    for d in demos:
        chat.append({"role": "user", "content": _rerank_task(d["question"], d["facts"], len(d["ids"]))})
        chat.append({"role": "assistant", "content": json.dumps(_demo_answer(d["facts"], d["ids"]))})
    chat.append({"role": "user", "content": _rerank_task(question, sentences, select_n, titles)})
    return chat


# ---------------------------------------------------------------------------------------------- answer (KG questions)
_ANSWER_INSTRUCTIONS = (
    "Answer the question using only the facts below. Reply with the answer names only, copied exactly from the "
    "facts, separated by \" | \"; no explanation."
)
_ANSWER_EXAMPLE = (
    "Which films did the director of Grey Harbour direct?",
    ("Grey Harbour directed by Mara Quill", "Salt Lanterns directed by Mara Quill",
     "The Tin Orchard directed by Mara Quill", "Grey Harbour release year 1987"),
    "Salt Lanterns | The Tin Orchard",
)


def _answer_task(question: str, facts: Sequence[str]) -> str:
    lines = "\n".join(f"- {f}" for f in facts)
    return f"Facts:\n{lines}\n\nQuestion: {question.strip()}"


def answer_prompt(question: str, facts: Sequence[str], form: str = "text") -> list[dict]:
    """One-shot chat answering a KG question from the reranked facts ("name | name", nothing else;
    form="json": {"answers": [...]})."""
    q, ex_facts, ex_answer = _ANSWER_EXAMPLE
    instructions = _ANSWER_INSTRUCTIONS
    if form == "json":
        instructions = instructions.replace('separated by " | "', 'as one JSON object {"answers": [...]}')
        ex_answer = json.dumps({"answers": [a.strip() for a in ex_answer.split("|")]})
    return [
        {"role": "user", "content": f"{instructions}\n\n{_answer_task(q, ex_facts)}"},
        {"role": "assistant", "content": ex_answer},
        {"role": "user", "content": _answer_task(question, facts)},
    ]


# ---------------------------------------------------------------------------------------------- OpenIE
_OPENIE_INSTRUCTIONS = (
    "Extract the facts stated in the passage as [subject, predicate, object] triples. Use full names (replace "
    "pronouns with the names they refer to), keep predicates short, and include dates and numbers as objects. "
    "Answer with a JSON list of triples only."
)
_OPENIE_SHOTS = (  # (title, passage, its triples: subject | predicate | object)
    (
        "Marl Bridge",
        "Marl Bridge is a stone bridge over the river Tolle in Dunmere. It was designed by the engineer "
        "Cosima Fairweather and opened in 1872.",
        table_rows("""
            Marl Bridge        | is a        | stone bridge
            Marl Bridge        | crosses     | Tolle
            Marl Bridge        | located in  | Dunmere
            Marl Bridge        | designed by | Cosima Fairweather
            Cosima Fairweather | occupation  | engineer
            Marl Bridge        | opened in   | 1872
        """),
    ),
    (
        "The Paper Lantern",
        "The Paper Lantern is a 1958 drama film directed by Jasper Rookwood. He was born in Halden and was "
        "married to the actress Tove Lund.",
        table_rows("""
            The Paper Lantern | is a        | drama film
            The Paper Lantern | released in | 1958
            The Paper Lantern | directed by | Jasper Rookwood
            Jasper Rookwood   | born in     | Halden
            Jasper Rookwood   | spouse      | Tove Lund
            Tove Lund         | occupation  | actress
        """),
    ),
)


def openie_prompt(title: str, text: str) -> list[dict]:
    """Few-shot chat (one turn per example) asking for the passage's triples as a JSON list of lists."""
    chat: list[dict] = []
    for i, (t, p, triples) in enumerate(_OPENIE_SHOTS):
        prefix = f"{_OPENIE_INSTRUCTIONS}\n\n" if i == 0 else ""
        chat.append({"role": "user", "content": f"{prefix}Title: {t}\nPassage: {p}"})
        chat.append({"role": "assistant", "content": json.dumps(triples)})
    chat.append({"role": "user", "content": f"Title: {title.strip()}\nPassage: {text.strip()}"})
    return chat
