"""OpenIE with the configured LLM, for corpora that come without triples (HotpotQA, 2Wiki).

Each passage gets one few-shot prompt (prompts.openie_prompt) and the answer is parsed leniently
(JSON lists of >= 3 parts, else parsers.parse_triples), then filtered: a triple is kept when its subject and object are made of
words of the passage and differ (a small model copies its examples' facts or loops), at most
MAX_TRIPLES per passage. Two layers make it resumable: every answer goes through the LLM's
persistent response cache, and every finished passage is appended (flushed) to a JSONL store
under cache_dir("openie") whose name is keyed by the model, decoding settings and prompt version,
so an interrupted run continues where it stopped and a finished one is read back in a second.
"""

from __future__ import annotations

import hashlib
import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Sequence

from .... import settings
from ....errors import ConfigError
from ....llm import GenerationConfig
from ....parsers import iter_json_values, parse_triples
from .graph_index import entity_key
from ..prompts import OPENIE_PROMPT_VERSION, OPENIE_SCHEMA, openie_prompt
from .query_entities import grounded, words_of

if TYPE_CHECKING:  # pragma: no cover
    from ....datasets.items import Passage
    from ....llm import LLM

__all__ = ["OpenIEResult", "extract_openie", "openie_store_path", "triples_from_answer"]

_MAX_PART = 200
#: a passage of these corpora states a handful of facts; a model that starts repeating emits junk after them
MAX_TRIPLES = 20


@dataclass
class OpenIEResult:
    """Triples per passage id, plus counts and where they are stored."""

    triples: dict[str, list[tuple[str, str, str]]]
    store: Path
    stats: dict = field(default_factory=dict)


def openie_store_path(llm: "LLM", tag: str, max_new_tokens: int) -> Path:
    """The JSONL store of one (model, decoding, prompt version, corpus tag)."""
    if not tag or any(c in tag for c in "/\\") or tag.startswith("."):
        raise ConfigError(f"the OpenIE tag names a file: use letters, digits and dashes (got {tag!r}).")
    # the probe key holds the model, its decoding mode and (in schema mode) the schema: one store per decoding
    probe = llm.cache_key(openie_prompt("", ""), GenerationConfig(max_new_tokens=max_new_tokens, schema=OPENIE_SCHEMA))
    key = hashlib.sha1(f"{probe}|{OPENIE_PROMPT_VERSION}".encode()).hexdigest()[:12]
    return settings.cache_dir("openie") / f"{tag}-{key}.jsonl"


def _clean(triples, passage: str) -> list[tuple[str, str, str]]:
    """Keep well-formed, grounded triples: three non-empty parts, subject != object, both made of words of
    the passage (small models copy the few-shot examples or loop), at most MAX_TRIPLES, no repeats."""
    words = words_of(passage)
    out, seen = [], set()
    for t in triples:
        parts = tuple(" ".join(str(x).split()) for x in t)
        if len(parts) != 3 or not all(parts) or any(len(x) > _MAX_PART for x in parts):
            continue
        if entity_key(parts[0]) == entity_key(parts[2]) or not (grounded(parts[0], words) and grounded(parts[2], words)):
            continue
        if parts not in seen:
            seen.add(parts)
            out.append(parts)
            if len(out) >= MAX_TRIPLES:
                break
    return out


def _scalar(x) -> bool:
    return isinstance(x, (str, int, float)) and not isinstance(x, bool)


def triples_from_answer(text: str) -> list[tuple[str, ...]]:
    """Raw triples of an OpenIE answer.

    A JSON list of lists is read row by row: a row of >= 3 scalars becomes (first, middle parts
    joined, last), since small models split a predicate over items (["X", "married", "to", "Y"]);
    a row of 1 or 2 parts has no predicate or no object and is dropped (no predicate is invented),
    as is a row holding null, true/false, lists or objects. Such an answer is never re-read by the
    lenient parser (it would turn null into "None"). Anything else goes to the lenient parse_triples.
    """
    for value in iter_json_values(text or ""):
        if isinstance(value, list) and value and all(isinstance(t, list) for t in value):
            rows = [t for t in value if len(t) >= 3 and all(_scalar(x) for x in t)]
            return [(str(t[0]), " ".join(str(x) for x in t[1:-1]), str(t[-1])) for t in rows]
    return list(parse_triples(text or ""))


def _read_store(path: Path) -> dict[str, dict]:
    done: dict[str, dict] = {}
    if not path.exists():
        return done
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            line = line.strip()
            if not line:
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError:  # a line cut by a crash: that passage is simply redone
                continue
            if isinstance(row, dict) and "pid" in row:
                done[row["pid"]] = row
    return done


def extract_openie(passages: Sequence["Passage"], llm: "LLM", tag: str, batch_size: int = 8,
                   max_new_tokens: int = 384, progress: bool = True) -> OpenIEResult:
    """Triples for every passage (resuming from the store); passages whose answer yields none get []."""
    store = openie_store_path(llm, tag, max_new_tokens)
    done = _read_store(store)
    todo = [p for p in passages if p.pid not in done]
    bar = None
    if progress:
        from ....progress import progress_bar

        bar = progress_bar(total=len(passages), initial=len(passages) - len(todo), desc=f"OpenIE {tag}", unit="passage")
    t_start = time.perf_counter()
    store.parent.mkdir(parents=True, exist_ok=True)
    with open(store, "a", encoding="utf-8") as fh:
        for s in range(0, len(todo), max(1, int(batch_size))):
            chunk = todo[s:s + batch_size]
            results = llm.generate([openie_prompt(p.title, p.text) for p in chunk], max_new_tokens=max_new_tokens,
                                   schema=OPENIE_SCHEMA)
            for p, r in zip(chunk, results):
                triples = _clean(triples_from_answer(r.text), f"{p.title}\n{p.text}")
                row = {"pid": p.pid, "triples": [list(t) for t in triples], "raw": r.text,
                       "prompt_tokens": r.prompt_tokens, "completion_tokens": r.completion_tokens,
                       "seconds": round(r.seconds, 3), "finish_reason": r.finish_reason}
                fh.write(json.dumps(row, ensure_ascii=False) + "\n")
                fh.flush()
                done[p.pid] = row
            if bar is not None:
                bar.update(len(chunk))
    if bar is not None:
        bar.close()
    wanted = [p.pid for p in passages]
    # triples are re-derived from the stored raw answers, so a better filter applies without new LLM calls
    triples = {p.pid: _clean(triples_from_answer(done[p.pid].get("raw") or ""), f"{p.title}\n{p.text}") for p in passages}
    rows = [done[pid] for pid in wanted]
    stats = {
        "passages": len(wanted), "newly_extracted": len(todo), "seconds_this_call": round(time.perf_counter() - t_start, 2),
        "triples": sum(len(v) for v in triples.values()),
        "passages_without_triples": sum(1 for v in triples.values() if not v),
        "truncated_answers": sum(1 for r in rows if r.get("finish_reason") == "length"),
        "prompt_tokens": sum(int(r.get("prompt_tokens", 0)) for r in rows),
        "completion_tokens": sum(int(r.get("completion_tokens", 0)) for r in rows),
        "llm_seconds": round(sum(float(r.get("seconds", 0.0)) for r in rows), 2),
        "store": str(store),
    }
    return OpenIEResult(triples, store, stats)
