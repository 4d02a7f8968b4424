"""Pattern graphs: the query's shape as triples with UNKNOWN nodes, parsed, validated and prompted.

SimGRAG's first stage asks an LLM to split a question into phrases and to write each phrase as a
triple `(head, relation, tail)`; entities the question does not name are written
`UNKNOWN <type> <n>` and cost nothing in the graph semantic distance. This module holds

* `Pattern` - nodes (known entity mentions or unknowns) and directed edges with relation text;
* `parse_pattern_output` - a tolerant reader of the model's text (phrases line, triples in
  parentheses, JSON or pipes; names with commas are split using the question as a guide);
* `validate_pattern` - drops self-loops, duplicates and components without a known entity (they
  cannot be anchored in the KG) and says why a pattern is unusable;
* (`..prompts.build_pattern_prompt` - the few-shot chat (4, 8 or 12 shots) from `prompts/simgrag_pattern.yaml`, then
  the demonstrations chosen for the question (`demos.py`, config demos="nearest");
  `form="json"` (the schema-constrained mode) shows every shot as the JSON object of
  `PATTERN_SCHEMA` ({"phrases": [...], "triples": [[head, relation, tail], ...]}) instead of the
  paper's "Phrases:" / "Triples:" lines);
* `anchored_pattern_schema` - PATTERN_SCHEMA narrowed to one question: the first triple must have the
  entity the question marks in [brackets] as its head or tail (config `anchor_entity`, schema mode only);
* `pattern_schema` / `anchored_pattern_schema(..., relations=)` - the relation slot of every triple narrowed to
  the loaded KG's relation names, an enum (config `relation_vocabulary`, schema mode only).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Iterable, Sequence

from ....datasets.items import marked_names
from ....errors import ConfigError
from ....parsers import extract_json, parse_triples, strip_code_fences

__all__ = [
    "PatternNode", "PatternEdge", "Pattern", "PatternCheck", "ParsedPatternOutput",
    "parse_unknown", "parse_pattern_output", "validate_pattern",
    "pattern_family", "MAX_PATTERN_EDGES", "PATTERN_SCHEMA",
    "marked_entities", "anchored_pattern_schema", "pattern_schema", "RELATION_VOCABULARY_MAX",
]

MAX_PATTERN_EDGES = 12  # a longer pattern is a model running on, not a question's shape

#: the pattern stage's answer shape (structured="schema"): phrases, then triples of three short strings
PATTERN_SCHEMA = {
    "type": "object",
    "properties": {
        "phrases": {"type": "array", "items": {"type": "string", "minLength": 1, "maxLength": 120}, "maxItems": 6},
        "triples": {"type": "array", "minItems": 1, "maxItems": 6,
                    "items": {"type": "array", "minItems": 3, "maxItems": 3,
                              "items": {"type": "string", "minLength": 1, "maxLength": 80}}},
    },
    "required": ["phrases", "triples"],
    "additionalProperties": False,
}

#: a KG with more relation names than this is refused by `relation_vocabulary` (the prompt lists them all)
RELATION_VOCABULARY_MAX = 100


def _relation_slot(relations: Sequence[str] | None) -> dict:
    """The relation item of a triple: a short string, or one of `relations` exactly (an enum)."""
    if not relations:
        return dict(PATTERN_SCHEMA["properties"]["triples"]["items"]["items"])
    return {"enum": list(relations)}


def _triple(head: dict, relation: dict, tail: dict) -> dict:
    return {"type": "array", "prefixItems": [head, relation, tail], "minItems": 3, "maxItems": 3}


def pattern_schema(relations: Sequence[str] | None = None) -> dict:
    """PATTERN_SCHEMA, or with `relations` (the KG's relation names) PATTERN_SCHEMA whose relation slot is an enum.

    Heads and tails keep the static limits; the triple is written with `prefixItems` (llama.cpp's converter
    reads it when no `items` stands beside it)."""
    if not relations:
        return PATTERN_SCHEMA
    text = dict(PATTERN_SCHEMA["properties"]["triples"]["items"]["items"])
    triples = {**PATTERN_SCHEMA["properties"]["triples"], "items": _triple(text, _relation_slot(relations), text)}
    return {**PATTERN_SCHEMA, "properties": {**PATTERN_SCHEMA["properties"], "triples": triples}}


#: the names a question marks in [brackets], in order, each once (the datasets' convention)
marked_entities = marked_names


def anchored_pattern_schema(question: str, relations: Sequence[str] | None = None) -> dict:
    """PATTERN_SCHEMA for one question: the first triple's head or tail is the question's first marked entity.

    A schema-valid pattern could otherwise write every node as UNKNOWN, which no search can anchor
    ("no known entity"). JSON Schema's `contains` would say "some triple names it", but llama.cpp's
    schema-to-grammar converter has no `contains` (and ignores `prefixItems` beside `items`), so the
    triples are written as one fixed-length tuple per length 1..6 whose first item is anchored, as the
    few-shot examples are. A question that marks no entity gets `pattern_schema(relations)`. With `relations`
    every triple's relation is one of them (see `pattern_schema`).
    """
    names = marked_entities(question)
    if not names:
        return pattern_schema(relations)
    text = dict(PATTERN_SCHEMA["properties"]["triples"]["items"]["items"])
    rel = _relation_slot(relations)
    triple = _triple(text, rel, text) if relations else PATTERN_SCHEMA["properties"]["triples"]["items"]
    name = {"const": names[0]}
    first = {"anyOf": [_triple(name, rel, text), _triple(text, rel, name)]}
    n_max = PATTERN_SCHEMA["properties"]["triples"]["maxItems"]
    triples = {"anyOf": [{"type": "array", "prefixItems": [first] + [triple] * k, "minItems": k + 1, "maxItems": k + 1}
                         for k in range(n_max)]}
    return {**PATTERN_SCHEMA, "properties": {**PATTERN_SCHEMA["properties"], "triples": triples}}


# "UNKNOWN movie 1" (upper case: a title such as "Unknown" stays a name), or lower case with a number.
_UNKNOWN = re.compile(r"^\s*UNKNOWN(?![a-z])[\s_:#-]*(?P<type>[^\d]*?)[\s_:#-]*(?P<num>\d+)?\s*$")
_UNKNOWN_NUMBERED = re.compile(r"^\s*unknown[\s_:#-]+(?P<type>[^\d]*?)[\s_:#-]*(?P<num>\d+)\s*$", re.I)
_VARIABLE = re.compile(r"^\s*\?\s*(?P<type>[A-Za-z_]*?)(?P<num>\d*)\s*$")
_WRAPPERS = "\"'`[]{}<>"


def parse_unknown(label: str) -> tuple[str, str] | None:
    """(type, number) when `label` names an unknown node ('UNKNOWN movie 1', '?x', 'unknown_director_2')."""
    if not isinstance(label, str):
        return None
    text = label.strip()
    m = _UNKNOWN.match(text) or _UNKNOWN_NUMBERED.match(text) or _VARIABLE.match(text)
    if not m:
        return None
    kind = re.sub(r"[\s_]+", " ", (m.group("type") or "")).strip().lower()
    return kind, (m.group("num") or "")


def _clean_label(label: str) -> str:
    s = re.sub(r"\s+", " ", str(label)).strip()
    while len(s) >= 2 and s[0] in _WRAPPERS and s[-1] in _WRAPPERS:
        s = s[1:-1].strip()
    return s.strip(" .;")


@dataclass
class PatternNode:
    """One pattern node: a named entity mention (`known`) or an UNKNOWN placeholder with a type."""

    label: str
    known: bool
    type: str | None = None


@dataclass
class PatternEdge:
    """A directed pattern edge head -> tail (node indexes) with the relation text as written."""

    head: int
    relation: str
    tail: int


@dataclass
class Pattern:
    """A query's pattern graph. `answer` is the index of the node that holds the answer when known
    (oracle patterns: the last unknown); LLM patterns leave it None."""

    nodes: list[PatternNode]
    edges: list[PatternEdge]
    answer: int | None = None
    source: str = "llm"

    @classmethod
    def from_triples(cls, triples: Iterable[Sequence[str]], answer: str | None = None, source: str = "llm") -> "Pattern":
        """Nodes are merged by label (case and spacing ignored); unknowns by their type and number."""
        nodes: list[PatternNode] = []
        index: dict[str, int] = {}

        def node_of(label: str) -> int:
            label = _clean_label(label)
            unk = parse_unknown(label)
            key = f"unknown::{unk[0]}::{unk[1]}" if unk else "known::" + label.casefold()
            if key not in index:
                index[key] = len(nodes)
                if unk:
                    shown = " ".join(p for p in ("UNKNOWN", unk[0], unk[1]) if p)
                    nodes.append(PatternNode(shown, False, unk[0] or None))
                else:
                    nodes.append(PatternNode(label, True))
            return index[key]

        edges = []
        for triple in triples:
            if len(triple) != 3:
                raise ConfigError(f"a pattern triple is (head, relation, tail); got {triple!r}.")
            h, r, t = triple
            relation = _clean_label(r)
            edges.append(PatternEdge(node_of(h), relation, node_of(t)))
        answer_idx = None
        if answer is not None:
            ans = _clean_label(answer)
            unk = parse_unknown(ans)
            key = f"unknown::{unk[0]}::{unk[1]}" if unk else "known::" + ans.casefold()
            answer_idx = index.get(key)
        return cls(nodes, edges, answer_idx, source)

    # ------------------------------------------------------------------ views
    @property
    def known_nodes(self) -> list[int]:
        return [i for i, n in enumerate(self.nodes) if n.known]

    @property
    def unknown_nodes(self) -> list[int]:
        return [i for i, n in enumerate(self.nodes) if not n.known]

    def triples(self) -> list[tuple[str, str, str]]:
        return [(self.nodes[e.head].label, e.relation, self.nodes[e.tail].label) for e in self.edges]

    def degree(self) -> list[int]:
        deg = [0] * len(self.nodes)
        for e in self.edges:
            deg[e.head] += 1
            deg[e.tail] += 1
        return deg

    def components(self) -> list[tuple[list[int], list[int]]]:
        """(node indexes, edge indexes) of each weakly connected component, in order of first node."""
        parent = list(range(len(self.nodes)))

        def find(x: int) -> int:
            while parent[x] != x:
                parent[x] = parent[parent[x]]
                x = parent[x]
            return x

        for e in self.edges:
            a, b = find(e.head), find(e.tail)
            if a != b:
                parent[max(a, b)] = min(a, b)
        groups: dict[int, tuple[list[int], list[int]]] = {}
        for i in range(len(self.nodes)):
            groups.setdefault(find(i), ([], []))[0].append(i)
        for j, e in enumerate(self.edges):
            groups[find(e.head)][1].append(j)
        return [groups[k] for k in sorted(groups)]

    def to_dict(self) -> dict:
        return {"triples": [list(t) for t in self.triples()], "source": self.source,
                "answer": self.nodes[self.answer].label if self.answer is not None else None,
                "known": [n.label for n in self.nodes if n.known],
                "unknown": [n.label for n in self.nodes if not n.known]}

    @classmethod
    def from_dict(cls, data: dict) -> "Pattern":
        return cls.from_triples([tuple(t) for t in data["triples"]], data.get("answer"), data.get("source", "llm"))

    def __str__(self) -> str:
        return "\n".join(f"({h}, {r}, {t})" for h, r, t in self.triples())


# ----------------------------------------------------------------------------- validation


@dataclass
class PatternCheck:
    """The outcome of validation: the usable pattern (cleaned) or the reasons there is none."""

    ok: bool
    pattern: Pattern | None
    errors: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    @property
    def error(self) -> str | None:
        return "; ".join(self.errors) if self.errors else None


def validate_pattern(pattern: Pattern | None, max_edges: int = MAX_PATTERN_EDGES,
                     typed_unknowns: bool = False) -> PatternCheck:
    """Clean a pattern and decide whether it can be searched.

    Self-loop and duplicate triples are dropped (warnings); a component without any known entity
    is dropped (warning) because nothing anchors it in the KG, unless `typed_unknowns` (the KG has
    entity types, so SimGRAG's type-candidate rule anchors it) and one of its UNKNOWN nodes has a
    type; no triples, no usable component, or more than `max_edges` triples are errors.
    """
    if pattern is None or not pattern.edges:
        return PatternCheck(False, None, ["no triples"])
    warnings: list[str] = []
    keep: list[PatternEdge] = []
    seen: set[tuple[int, str, int]] = set()
    for e in pattern.edges:
        key = (e.head, e.relation.casefold(), e.tail)
        if e.head == e.tail:
            warnings.append(f"dropped self-loop triple ({pattern.nodes[e.head].label}, {e.relation}, ...)")
        elif not e.relation:
            warnings.append("dropped a triple with an empty relation")
        elif key in seen:
            warnings.append(f"dropped duplicate triple ({pattern.nodes[e.head].label}, {e.relation}, "
                            f"{pattern.nodes[e.tail].label})")
        else:
            seen.add(key)
            keep.append(e)
    if len(keep) > max_edges:
        return PatternCheck(False, None, [f"{len(keep)} triples (more than {max_edges})"], warnings)
    cleaned = _rebuild(pattern, keep)
    if cleaned is None:
        return PatternCheck(False, None, ["no triples left after cleaning"], warnings)
    anchored_edges: list[PatternEdge] = []
    for nodes, edge_ids in cleaned.components():
        if any(cleaned.nodes[i].known for i in nodes):
            anchored_edges.extend(cleaned.edges[j] for j in edge_ids)
        elif typed_unknowns and any((cleaned.nodes[i].type or "").strip() for i in nodes):
            anchored_edges.extend(cleaned.edges[j] for j in edge_ids)
            warnings.append(f"a component of {len(edge_ids)} triple(s) has no known entity: "
                            "its typed UNKNOWN nodes get type candidates")
        else:
            warnings.append(f"dropped a component of {len(edge_ids)} triple(s) with no known entity")
    if not anchored_edges:
        why = "no known entity and no typed UNKNOWN node" if typed_unknowns else "no known entity: every node is UNKNOWN"
        return PatternCheck(False, None, [why], warnings)
    anchored_edges.sort(key=lambda e: cleaned.edges.index(e))
    final = _rebuild(cleaned, anchored_edges)
    return PatternCheck(True, final, [], warnings)


def _rebuild(pattern: Pattern, edges: list[PatternEdge]) -> Pattern | None:
    """A pattern with only `edges` and the nodes they use (indexes renumbered, order kept)."""
    if not edges:
        return None
    used = sorted({e.head for e in edges} | {e.tail for e in edges})
    remap = {old: new for new, old in enumerate(used)}
    nodes = [pattern.nodes[i] for i in used]
    new_edges = [PatternEdge(remap[e.head], e.relation, remap[e.tail]) for e in edges]
    answer = remap.get(pattern.answer) if pattern.answer is not None else None
    return Pattern(nodes, new_edges, answer, pattern.source)


# ----------------------------------------------------------------------------- parsing


@dataclass
class ParsedPatternOutput:
    """What could be read from the model's answer: phrases, triples, and a parse error if nothing."""

    phrases: list[str]
    triples: list[tuple[str, str, str]]
    error: str | None = None


_PHRASES = re.compile(r"^\s*\**\s*phrases?\s*\**\s*[:：]\s*(?P<rest>.*)$", re.I)
_TRIPLES = re.compile(r"^\s*\**\s*(?:triples?|triplets?|pattern)\s*\**\s*[:：]\s*(?P<rest>.*)$", re.I)
_NEXT_EXAMPLE = re.compile(r"^\s*(?:question|query|q)\s*[:：]", re.I)


def _paren_groups(line: str) -> list[str]:
    """Contents of the top-level (...) groups of one line (nested parentheses stay inside a name)."""
    groups, depth, start = [], 0, -1
    for i, c in enumerate(line):
        if c == "(":
            if depth == 0:
                start = i + 1
            depth += 1
        elif c == ")" and depth > 0:
            depth -= 1
            if depth == 0:
                groups.append(line[start:i])
    return groups


def _split_parts(inner: str) -> list[str]:
    quoted = re.findall(r'"([^"]*)"', inner)
    if len(quoted) == 3:
        return quoted
    return [p for p in (x.strip() for x in inner.split(","))]


def _name_score(part: str, question_cf: str) -> int:
    if parse_unknown(part):
        return 2
    clean = _clean_label(part).casefold()
    return 2 if clean and clean in question_cf else 0


def _resolve_commas(parts: list[str], question: str | None) -> tuple[str, str, str] | None:
    """Split >3 comma parts into (head, relation, tail): the relation is one part, names may hold commas.

    The split whose head and tail are UNKNOWN nodes or appear in the question wins; ties go to the
    earliest relation position.
    """
    parts = [p.strip() for p in parts]
    if len(parts) == 3:
        return tuple(parts) if all(parts) else None  # type: ignore[return-value]
    if len(parts) < 3:
        return None
    question_cf = (question or "").casefold()
    best, best_score = None, -1
    for i in range(1, len(parts) - 1):
        head, rel, tail = ", ".join(parts[:i]), parts[i], ", ".join(parts[i + 1:])
        if not head or not rel or not tail or parse_unknown(rel):
            continue
        score = _name_score(head, question_cf) + _name_score(tail, question_cf)
        if score > best_score:
            best, best_score = (head, rel, tail), score
    return best


def parse_pattern_output(text: str, question: str | None = None) -> ParsedPatternOutput:
    """Read phrases and triples from a model's output; never raises.

    Reads up to the start of another example (a line `Question: ...`). Triples come from
    parenthesised groups (names with commas are split with the question's help), else from any
    JSON / bracket / pipe form the shared triple parser understands.
    """
    if not isinstance(text, str) or not text.strip():
        return ParsedPatternOutput([], [], "empty output")
    if text.lstrip().startswith("{"):  # the JSON form (schema-constrained, or a model that chose JSON)
        value = extract_json(text)
        if isinstance(value, dict) and isinstance(value.get("triples"), list):
            phrases = [_clean_label(p) for p in value.get("phrases") or [] if isinstance(p, str) and _clean_label(p)]
            triples = [tuple(_clean_label(x) for x in t) for t in parse_triples(json.dumps({"triples": value["triples"]}))]
            triples = [t for t in triples if all(t)]
            if triples:
                return ParsedPatternOutput(phrases, triples, None)  # type: ignore[arg-type]
            return ParsedPatternOutput(phrases, [], "no complete triple in the JSON output")
    body = strip_code_fences(text) if "```" in text else text
    lines = body.splitlines()
    kept: list[str] = []
    phrases: list[str] = []
    for i, line in enumerate(lines):
        if i > 0 and _NEXT_EXAMPLE.match(line) and kept:
            break
        m = _PHRASES.match(line)
        if m:
            rest = m.group("rest").strip().strip("[]")
            phrases = [_clean_label(p) for p in re.split(r";|\|", rest) if _clean_label(p)]
            continue
        t = _TRIPLES.match(line)
        kept.append(t.group("rest") if t else line)
    section = "\n".join(kept)
    triples: list[tuple[str, str, str]] = []
    for inner in (g for line in kept for g in _paren_groups(line)):
        triple = _resolve_commas(_split_parts(inner), question)
        if triple and all(_clean_label(x) for x in triple):
            triples.append(tuple(_clean_label(x) for x in triple))  # type: ignore[arg-type]
    if not triples:
        triples = [tuple(_clean_label(x) for x in t) for t in parse_triples(section)]  # type: ignore[misc]
        triples = [t for t in triples if all(t)]
    if not triples:
        return ParsedPatternOutput(phrases, [], "no triples found in the output")
    return ParsedPatternOutput(phrases, triples, None)


def pattern_family(shot_family: str, kg_relations: Iterable[str] | None = None) -> str:
    """Which few-shot set fits a dataset: its own (`DatasetTraits.shot_family`: 'movies' for MetaQA's schema,
    'people' for PathQuestion's, 'claims' for FactKG's claims over DBpedia), else the one its KG's relations name."""
    if shot_family:
        return shot_family
    rels = {r.lower() for r in (kg_relations or [])}
    return "movies" if {"directed_by", "starred_actors"} & rels else "people"
