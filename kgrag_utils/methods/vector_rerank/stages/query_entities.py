"""Query entities: LLM extraction (few-shot, JSON list) with a stated lexical fallback.

LLM names whose words do not all occur in the question are dropped (a 0.5B model copies the
few-shot examples' entities). Fallback, used when no LLM name survives (and always when
entity_extraction="lexical", which the no-LLM expand variant uses):
1. the longest word n-grams of the question that are entity names of the index (case- and
   space-insensitive; a match must contain a capitalised word or a digit, so common nouns that
   happen to be entity names do not become seeds);
2. runs of capitalised words or numbers not already covered (e.g. a name the OpenIE step missed),
   without a leading question word;
3. if both are empty, the whole question (the entity search then works like a relation search).
The source of every entity list ("llm", "lexical", "question") is recorded per example. On KG question
datasets the entities the question marks itself come first (`marked_entities`: MetaQA's [brackets],
PathQuestion's snake_case names); the rules above apply only when there are none.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Mapping

from ....parsers import extract_json_list
from .graph_index import entity_key

__all__ = ["QueryEntities", "parse_entity_answer", "lexical_entities", "marked_entities", "words_of", "grounded"]

_MAX_NGRAM = 8
_WORD = re.compile(r"\w+")
_EDGE_PUNCT = "?!,.;:\"'()[]{}“”‘’«»"
_STOP = frozenset(
    "a an the of in on at to for from by with and or as is was were are be been being did does do has had have "
    "what which who whom whose when where why how that this these those it its he she his her they their them "
    "there than then into onto about after before during between under over same also not no yes one".split()
)
_QUESTION_WORDS = frozenset("who whom whose what when where which why how in on at for from is was were are did does do "
                            "the a an name list".split())
_CONNECTORS = frozenset("of the de la le von van der del da du and on upon y".split())


@dataclass
class QueryEntities:
    """The entity strings used as entity-search queries, and where they came from."""

    names: list[str]
    source: str  # "llm" | "lexical" | "question"
    raw: str | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    notes: list[str] = field(default_factory=list)


def words_of(text: str) -> set[str]:
    """The case-folded word set of a text (what `grounded` compares against)."""
    return set(_WORD.findall(str(text).casefold()))


def grounded(name: str, words: set[str]) -> bool:
    """True when every word of `name` occurs in `words` (order and case free): the name was copied, not invented."""
    own = _WORD.findall(str(name).casefold())
    return bool(own) and all(w in words for w in own)


def parse_entity_answer(text: str | None, question: str | None = None, max_len: int = 120) -> list[str] | None:
    """The strings of the first JSON list in an LLM answer (deduplicated, in order), or None when there are none.

    With `question`, names whose words do not all occur in the question are dropped (small models
    copy the few-shot examples' entities); None when nothing survives.
    """
    if not text:
        return None
    items = extract_json_list(text)
    words = words_of(question) if question is not None else None
    out: dict[str, str] = {}
    for item in items:
        if isinstance(item, (int, float)) and not isinstance(item, bool):
            item = str(item)
        if not isinstance(item, str):
            continue
        name = " ".join(item.split()).strip(_EDGE_PUNCT + " ")
        if name and len(name) <= max_len and (words is None or grounded(name, words)):
            out.setdefault(entity_key(name), name)
    return list(out.values()) or None


def _tokens(question: str) -> list[str]:
    toks = []
    for raw in question.split():
        tok = raw.strip(_EDGE_PUNCT)
        for suffix in ("'s", "’s"):
            if tok.endswith(suffix):
                tok = tok[: -len(suffix)]
        tok = tok.strip(_EDGE_PUNCT)
        if tok:
            toks.append(tok)
    return toks


def _salient(tok: str) -> bool:
    return tok[:1].isupper() or any(c.isdigit() for c in tok)


_BRACKETED = re.compile(r"\[([^\[\]]+)\]")


def marked_entities(question: str, entity_ids: Mapping[str, int]) -> list[str]:
    """Entities the question marks itself (KG question datasets): [bracketed] spans (MetaQA marks its
    topic entity so) and snake_case tokens that are entity names (PathQuestion); failing both, whole
    tokens (not stop words, 3+ characters) that are entity names (PathQuestion's one-word names); [] if none."""
    out: dict[str, str] = {}
    for m in _BRACKETED.finditer(question):
        name = " ".join(m.group(1).split())
        if name:
            out.setdefault(entity_key(name), name)
    toks = [raw.strip(_EDGE_PUNCT) for raw in question.split()]
    for tok in toks:
        if "_" in tok and entity_key(tok) in entity_ids:
            out.setdefault(entity_key(tok), tok)
    if not out:  # single-word names (PathQuestion's "clodoald 's dad"): a whole token that is an entity name
        for tok in toks:
            if len(tok) > 2 and tok.casefold() not in _STOP and entity_key(tok) in entity_ids:
                out.setdefault(entity_key(tok), tok)
    return list(out.values())


def lexical_entities(question: str, entity_ids: Mapping[str, int], max_ngram: int = _MAX_NGRAM) -> list[str]:
    """Entity strings found in the question without an LLM (rules 1-2 of the module docstring); [] if none."""
    toks = _tokens(question)
    n = len(toks)
    covered = [False] * n
    found: list[tuple[int, str]] = []
    for size in range(min(max_ngram, n), 0, -1):
        for start in range(0, n - size + 1):
            if any(covered[start:start + size]):
                continue
            span = toks[start:start + size]
            if not any(_salient(t) for t in span):
                continue
            if size == 1 and span[0].lower() in _STOP:
                continue
            text = " ".join(span)
            if entity_key(text) in entity_ids:
                found.append((start, text))
                covered[start:start + size] = [True] * size
    i = 0
    while i < n:  # capitalised runs not covered by a vocabulary match
        if covered[i] or not _salient(toks[i]):
            i += 1
            continue
        j = i
        while j + 1 < n and not covered[j + 1] and (_salient(toks[j + 1]) or
                                                    (toks[j + 1].lower() in _CONNECTORS and j + 2 < n and _salient(toks[j + 2]))):
            j += 1
        span = toks[i:j + 1]
        while span and span[0].lower() in _QUESTION_WORDS:
            span = span[1:]
        if span and not (len(span) == 1 and span[0].lower() in _STOP):
            found.append((i, " ".join(span)))
        i = j + 1
    found.sort(key=lambda x: x[0])
    out: dict[str, str] = {}
    for _, text in found:
        out.setdefault(entity_key(text), text)
    return list(out.values())
