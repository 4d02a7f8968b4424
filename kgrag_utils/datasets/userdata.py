"""Your own KG and questions, no code: a dataset FOLDER given where a dataset name goes (`dataset=data/example-kg`).

The format (data/FORMATS.md#your-own-dataset-folder has it in full):

* `facts.tsv` (tab-separated) or `facts.csv` (comma-separated, quoted fields allowed): one fact a line,
  `head, relation, tail`; a first line `head relation tail` is a header and skipped;
* `questions.jsonl`: one JSON object a line with `question` (required) and optionally `id`, `answers`
  (a list of strings, or one string), `topic_entities` (KG names), `chain` (the gold relation path:
  `["directed_by", "~starred_actors"]`, a leading `~` walking a fact backwards) and `split`
  (`train`, `dev` or `test`; default `test`). Topic entities may instead be marked `[X]` in the question,
  or left out: the method links them (`kgrag_utils.linking`);
* optional `relations.tsv` / `entities.tsv`: `name<TAB>description` (kept in `dataset.info`);
* optional `passages.jsonl` (`id`, `text`, optional `title`): a folder with passages and no facts is a
  passage dataset (vector rerank, KGP); question `supporting` lists the gold passage ids.

`validate_folder` reads everything and raises a one-line `ConfigError` naming the file, the line and the fix
at the first problem; the runner's pre-check calls it before a kernel starts. The splits: `test` holds the
questions marked test or unmarked, `train` / `dev` those marked so, `all` every question.
"""

from __future__ import annotations

import csv
import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .. import settings
from ..errors import ConfigError, DatasetMissingError, did_you_mean
from .items import ChainStep, Dataset, KGQuestion, Passage, PassageQuestion, marked_names

__all__ = ["FACT_FILES", "QUESTIONS_FILE", "PASSAGES_FILE", "SPLITS", "QUESTION_KEYS", "is_folder_name",
           "resolve_folder", "folder_kind", "validate_folder", "load_folder", "find_folders", "FolderContents"]

FACT_FILES = ("facts.tsv", "facts.csv")
QUESTIONS_FILE = "questions.jsonl"
PASSAGES_FILE = "passages.jsonl"
DESCRIPTION_FILES = {"relations": "relations.tsv", "entities": "entities.tsv"}
SPLITS = ("test", "dev", "train", "all")
QUESTION_KEYS = ("id", "question", "answers", "topic_entities", "chain", "split", "supporting", "qtype")
PASSAGE_KEYS = ("id", "title", "text")
_HEADER = ("head", "relation", "tail")


def is_folder_name(value: Any) -> bool:
    """A `dataset` value that names a folder rather than a registered dataset (registered names hold no
    path separator): it holds '/' or '\\', or starts with '.' or '~'."""
    return isinstance(value, str) and bool(value) and ("/" in value or "\\" in value or value[0] in ".~")


def folder_kind(value: str) -> str:
    """"kgqa" when the folder has a facts file (or none yet: the check says what is missing), "passages" when it
    has passages only; decided from the file names alone."""
    try:
        root = resolve_folder(value)
    except DatasetMissingError:
        return "kgqa"
    has_facts = any((root / f).is_file() for f in FACT_FILES)
    return "passages" if not has_facts and (root / PASSAGES_FILE).is_file() else "kgqa"


def resolve_folder(value: str) -> Path:
    """The folder a `dataset` value names: absolute as given; relative from the repository root, else from the
    current directory (where `kgrag` was typed). Missing: one line naming both places tried."""
    raw = Path(value).expanduser()
    tried = [raw] if raw.is_absolute() else [settings.repo_root() / raw, Path.cwd() / raw]
    for p in tried:
        if p.is_dir():
            return p.resolve()
    raise DatasetMissingError(f"dataset folder {value!r} does not exist (looked in {', '.join(str(p) for p in tried)}); "
                              f"give an existing folder holding {FACT_FILES[0]} and {QUESTIONS_FILE} "
                              "(see data/FORMATS.md#your-own-dataset-folder).")


@dataclass
class FolderContents:
    """What a valid folder holds (read once, checked)."""

    root: Path
    facts: list[tuple[str, str, str]] | None
    fact_file: str | None
    questions: list[dict]
    passages: list[dict] | None
    descriptions: dict[str, dict[str, str]] = field(default_factory=dict)

    @property
    def kind(self) -> str:
        return "kgqa" if self.facts is not None else "passages"


def _where(path: Path, line: int) -> str:
    return f"{path} line {line}"


def _read_facts(path: Path) -> list[tuple[str, str, str]]:
    delimiter = "\t" if path.suffix == ".tsv" else ","
    facts = []
    with open(path, encoding="utf-8", newline="") as fh:
        for line, row in enumerate(csv.reader(fh, delimiter=delimiter), start=1):
            if not row or all(not c.strip() for c in row) or row[0].lstrip().startswith("#"):
                continue
            cells = [c.strip() for c in row]
            if line == 1 and tuple(c.casefold() for c in cells) == _HEADER:
                continue
            sep = "tabs" if delimiter == "\t" else "commas (quote a name that holds a comma)"
            if len(cells) != 3:
                raise ConfigError(f"{_where(path, line)}: {len(cells)} field(s), expected 3 (head, relation, tail) "
                                  f"separated by {sep}: fix that line.")
            if not all(cells):
                which = _HEADER[cells.index("")]
                raise ConfigError(f"{_where(path, line)}: the {which} is empty: give all of head, relation, tail.")
            facts.append((cells[0], cells[1], cells[2]))
    if not facts:
        raise ConfigError(f"{path.name} holds no fact: write one 'head<TAB>relation<TAB>tail' a line.")
    return facts


def _read_jsonl(path: Path, keys: tuple[str, ...], what: str) -> list[tuple[int, dict]]:
    rows = []
    with open(path, encoding="utf-8") as fh:
        for line, text in enumerate(fh, start=1):
            if not text.strip():
                continue
            try:
                obj = json.loads(text)
            except json.JSONDecodeError as exc:
                raise ConfigError(f"{_where(path, line)}: not JSON ({exc.msg} at column {exc.colno}): write one JSON "
                                  f"object a line, e.g. {{\"id\": \"q1\", \"{what}\": \"...\"}}.") from None
            if not isinstance(obj, dict):
                raise ConfigError(f"{_where(path, line)}: a JSON {type(obj).__name__}, expected an object "
                                  f"{{\"{what}\": ...}}: one object a line.")
            unknown = [k for k in obj if k not in keys]
            if unknown:
                tip = did_you_mean(unknown[0], keys)
                raise ConfigError(f"{_where(path, line)}: unknown key {unknown[0]!r}"
                                  f"{' (' + tip + ')' if tip else ''}; keys: {', '.join(keys)}.")
            rows.append((line, obj))
    if not rows:
        raise ConfigError(f"{path.name} is empty: write one JSON object a line (see data/FORMATS.md).")
    return rows


def _strings(value: Any, where: str, key: str) -> list[str]:
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(x, str) and x.strip() for x in value):
        raise ConfigError(f"{where}: {key!r} must be a list of non-empty strings, e.g. [\"Paris\"], got {value!r}.")
    return [x.strip() for x in value]


def _chain(value: Any, where: str, relations: set[str] | None) -> list[ChainStep]:
    if not isinstance(value, list) or not value:
        raise ConfigError(f"{where}: 'chain' must be a non-empty list of relation names (\"~r\" walks backwards), "
                          f"got {value!r}.")
    steps: list[ChainStep] = []
    for step in value:
        if isinstance(step, str) and step.strip():
            name, forward = (step[1:], False) if step.startswith("~") else (step, True)
        elif isinstance(step, list) and len(step) == 2 and isinstance(step[0], str) and isinstance(step[1], bool):
            name, forward = step[0], step[1]
        else:
            raise ConfigError(f"{where}: chain step {step!r} is not a relation name (\"r\" or \"~r\") nor "
                              f"[name, forward?].")
        name = name.strip()
        if relations is not None and name not in relations:
            tip = did_you_mean(name, relations)
            raise ConfigError(f"{where}: chain relation {name!r} is not in the facts"
                              f"{' (' + tip + ')' if tip else ''}: spell it as the facts file does.")
        steps.append((name, forward))
    return steps


def _check_question(obj: dict, where: str, entities: set[str] | None, relations: set[str] | None,
                    passage_ids: set[str] | None) -> None:
    q = obj.get("question")
    if not isinstance(q, str) or not q.strip():
        raise ConfigError(f"{where}: no \"question\" text: every line needs {{\"question\": \"...\"}}.")
    if "id" in obj and not isinstance(obj["id"], (str, int)):
        raise ConfigError(f"{where}: 'id' must be a string or a number, got {obj['id']!r}.")
    if "answers" in obj:
        obj["answers"] = _strings(obj["answers"], where, "answers")
    if "topic_entities" in obj:
        obj["topic_entities"] = _strings(obj["topic_entities"], where, "topic_entities")
        for name in obj["topic_entities"] if entities is not None else ():
            if name not in entities:
                tip = did_you_mean(name, entities)
                raise ConfigError(f"{where}: topic entity {name!r} is not in the facts{' (' + tip + ')' if tip else ''}"
                                  ": spell it as the facts file does, or leave topic_entities out to link it.")
    if "chain" in obj:
        if entities is None:
            raise ConfigError(f"{where}: a 'chain' needs a facts file; remove it or add {FACT_FILES[0]}.")
        obj["chain"] = _chain(obj["chain"], where, relations)
    split = obj.get("split", "test")
    if split not in SPLITS[:3]:
        tip = did_you_mean(str(split), SPLITS[:3])
        raise ConfigError(f"{where}: split {split!r} is not one of train, dev, test{' (' + tip + ')' if tip else ''}.")
    if "supporting" in obj:
        obj["supporting"] = _strings(obj["supporting"], where, "supporting")
        missing = [p for p in obj["supporting"] if passage_ids is not None and p not in passage_ids]
        if passage_ids is None or missing:
            raise ConfigError(f"{where}: supporting passage {(missing or obj['supporting'])[0]!r} is not an id in "
                              f"{PASSAGES_FILE}: give ids of passages there.")


def _read_descriptions(path: Path) -> dict[str, str]:
    out = {}
    with open(path, encoding="utf-8", newline="") as fh:
        for line, row in enumerate(csv.reader(fh, delimiter="\t"), start=1):
            if not row or not row[0].strip() or row[0].startswith("#"):
                continue
            if len(row) != 2:
                raise ConfigError(f"{_where(path, line)}: {len(row)} field(s), expected 2: name<TAB>description.")
            out[row[0].strip()] = row[1].strip()
    return out


def validate_folder(value: str | Path) -> FolderContents:
    """Read and check a dataset folder; the first problem raises one line naming the file, the line and the fix."""
    root = resolve_folder(str(value)) if not isinstance(value, Path) else value
    present = [root / f for f in FACT_FILES if (root / f).is_file()]
    if len(present) > 1:
        raise ConfigError(f"{root}: both {FACT_FILES[0]} and {FACT_FILES[1]}: keep one facts file.")
    passages_path = root / PASSAGES_FILE
    if not present and not passages_path.is_file():
        raise DatasetMissingError(f"{root} holds neither {' nor '.join(FACT_FILES)} nor {PASSAGES_FILE}: add the facts "
                                  "(head<TAB>relation<TAB>tail a line; see data/FORMATS.md#your-own-dataset-folder).")
    if not (root / QUESTIONS_FILE).is_file():
        raise DatasetMissingError(f"{root} has no {QUESTIONS_FILE}: add one {{\"question\": ...}} object a line.")
    facts = _read_facts(present[0]) if present else None
    entities = {x for h, _, t in facts for x in (h, t)} if facts is not None else None
    relations = {r for _, r, _ in facts} if facts is not None else None
    passages = None
    if passages_path.is_file():
        passages = []
        for line, obj in _read_jsonl(passages_path, PASSAGE_KEYS, "text"):
            where = _where(passages_path, line)
            if not isinstance(obj.get("text"), str) or not obj["text"].strip():
                raise ConfigError(f"{where}: no \"text\": every passage needs {{\"id\": ..., \"text\": \"...\"}}.")
            obj.setdefault("id", f"p{line}")
            obj["id"] = str(obj["id"])
            passages.append(obj)
    pids = {p["id"] for p in passages} if passages is not None else None
    questions, seen = [], {}
    qpath = root / QUESTIONS_FILE
    for line, obj in _read_jsonl(qpath, QUESTION_KEYS, "question"):
        where = _where(qpath, line)
        _check_question(obj, where, entities, relations, pids)
        qid = str(obj.get("id", f"q{line}"))
        if qid in seen:
            raise ConfigError(f"{where}: id {qid!r} was used on line {seen[qid]} already: give each question its own id.")
        seen[qid] = line
        questions.append({**obj, "id": qid, "line": line})
    descriptions = {k: _read_descriptions(root / f) for k, f in DESCRIPTION_FILES.items() if (root / f).is_file()}
    return FolderContents(root, facts, present[0].name if present else None, questions, passages, descriptions)



def _question_item(obj: dict, prefix: str, kind: str, passages: dict[str, Passage] | None):
    answers = list(obj.get("answers") or [])
    meta = {"line": obj["line"], "split": obj.get("split", "test"), "scored": bool(answers or obj.get("supporting"))}
    if kind == "passages":
        sup = list(obj.get("supporting") or [])
        return PassageQuestion(qid=f"{prefix}{obj['id']}", question=obj["question"], answers=answers, paragraphs=[],
                               supporting=sup, supporting_titles=[passages[p].title for p in sup],
                               qtype=obj.get("qtype"), meta=meta)
    topics, source = list(obj.get("topic_entities") or []), "given"
    if not topics:
        topics, source = marked_names(obj["question"]), "marked"
    meta["topic_source"] = source if topics else "none (linked by the method)"
    chain = obj.get("chain")
    return KGQuestion(qid=f"{prefix}{obj['id']}", question=obj["question"], topic_entities=topics, answers=answers,
                      chain=chain, hops=len(chain) if chain else 0, qtype=obj.get("qtype"), meta=meta)


def load_folder(value: str, split: str = "test") -> Dataset:
    """A validated folder as a `Dataset` (name: `dataset_tag`; `info["folder"]` its path) of the questions of `split`."""
    from ..kg import KG

    if split not in SPLITS:
        raise ConfigError(f"dataset folder {value!r} has splits {', '.join(SPLITS)} (got {split!r}).")
    contents = validate_folder(value)
    kind = contents.kind
    corpus = ([Passage(pid=p["id"], title=str(p.get("title") or p["id"]), text=p["text"]) for p in contents.passages]
              if contents.passages is not None else None)
    by_pid = {p.pid: p for p in corpus} if corpus is not None else None
    chosen = [o for o in contents.questions if split == "all" or o.get("split", "test") == split]
    if not chosen:
        counts = {s: sum(1 for o in contents.questions if o.get("split", "test") == s) for s in SPLITS[:3]}
        fix = ("a method that learns from training questions (compact's relation knowledge, nearest demonstrations) "
               "needs some: add lines with \"split\": \"train\" and answers plus topic entities (or a chain)"
               if split == "train" else f"mark some lines \"split\": \"{split}\", or evaluate split='all'")
        raise ConfigError(f"{QUESTIONS_FILE} in {contents.root} has no {split} question (by split: {counts}): {fix}.")
    items = [_question_item(o, "", kind, by_pid) for o in chosen]
    kg = KG.from_triples(contents.facts, name=contents.root.name) if contents.facts is not None else None
    info = {"folder": str(contents.root), "facts_file": contents.fact_file, "user_folder": True,
            "has_chains": any(getattr(q, "chain", None) for q in items),
            "n_with_answers": sum(1 for q in items if q.answers),
            "relation_descriptions": contents.descriptions.get("relations", {}),
            "entity_descriptions": contents.descriptions.get("entities", {})}
    if kg is not None:
        info.update({"kg_entities": kg.num_entities, "kg_facts": kg.num_edges, "kg_relations": kg.num_relations})
        _answerable(items, kg)
    return Dataset(name=dataset_tag(contents), kind=kind, split=split, items=items, kg=kg, corpus=corpus,
                   source="user", root=contents.root, info=info)


def dataset_tag(contents: FolderContents) -> str:
    """The loaded dataset's name: `user-<folder>-<8 hex of the facts / passages files' sha256>`, a plain name (caches
    and file names take it) that changes when the graph or the passages change. The `dataset` parameter keeps the
    folder path."""
    import re

    from ..integrity import file_digest

    files = [contents.root / f for f in (contents.fact_file, PASSAGES_FILE if contents.passages is not None else None) if f]
    digest = hashlib.sha256("".join(file_digest(f)["sha256"] for f in files).encode()).hexdigest()[:8]
    return f"user-{re.sub(r'[^A-Za-z0-9_-]+', '-', contents.root.name).strip('-') or 'folder'}-{digest}"


def _answerable(items: list[KGQuestion], kg) -> None:
    """`answerable` for questions with answers, topics and a chain (along it); unknown (None) otherwise."""
    from .answerable import compute_answerable

    known = [q for q in items if q.answers and q.topic_entities and q.chain]
    if known:
        for q, flag in zip(known, compute_answerable(known, kg, mode="chain").tolist()):
            q.answerable = bool(flag)


def training_chains(items: list[KGQuestion], kg) -> list[KGQuestion]:
    """Training questions with a chain: given, or the first shortest topic-to-answer path in the KG (RoG's weak
    supervision, `rog.shortest_chains`); questions with neither are left out."""
    from .rog import shortest_chains

    out = []
    for q in items:
        if not q.chain and q.answers and q.topic_entities:
            chains, _ = shortest_chains(kg, q.topic_entities, q.answers)
            if chains:
                q.chain, q.hops = chains[0], len(chains[0])
                q.meta["chain_source"] = "shortest path"
        if q.chain:
            out.append(q)
    return out


def find_folders(root: Path | None = None) -> list[Path]:
    """Dataset folders directly under `root` (default: the repository's data/): those holding questions.jsonl."""
    root = root or settings.repo_root() / "data"
    return sorted(p for p in root.iterdir() if p.is_dir() and (p / QUESTIONS_FILE).is_file()) if root.is_dir() else []
