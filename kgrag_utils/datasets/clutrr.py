"""CLUTRR kinship stories and the generator's rule store.

Files (the official pre-generated release, and the sample generator, lay them out alike):
    <root>/data_*/<tasks>_train.csv, <tasks>_test.csv     e.g. 1.2,1.3_train.csv, 1.4_test.csv
    <root>/clutrr_store/rules_store.yaml, relations_store.yaml
Columns used: story, query (a Python-literal tuple of two names), target, story_edges,
edge_types, genders ("Name:gender,..."), f_comb, proof_state, task_name, id. Literal columns are
parsed with ast.literal_eval only.

Orientation, checked on the data: an edge (a, b) of type t reads "people[b] is the t of
people[a]" (proof_state: ('Donald', 'father', 'Michael') = Michael is Donald's father), and the
query (x, y) with target t reads "y is the t of x". In the store, (e_1, r, e_2) reads the same
way ("e_2 is a son of e_1" for child), so the surface words map onto store relations directly:
son/daughter -> child, father/mother -> inv-child, and so on.
"""

from __future__ import annotations

import ast
import csv
import io
import re
import sys
from pathlib import Path

import yaml

from ..errors import ConfigError, DatasetMissingError, IntegrityError
from .items import KinshipRules, KinshipStory
from .textfiles import read_text

__all__ = ["load_rules", "read_stories", "find_story_files", "parse_story_row", "chain_length_of_file"]

_RULES = "rules_store.yaml"
_RELATIONS = "relations_store.yaml"
# the store spells the female of "un" as "neice"; the stories and targets say "niece"
_SPELLING_FIXES = {"neice": "niece"}


def _literal(text: str, what: str):
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError) as exc:
        raise ConfigError(f"cannot parse CLUTRR column {what!r} as a Python literal: {text[:60]!r}") from exc


def _store_dir(root: Path) -> Path:
    for cand in (root / "clutrr_store", root / "store", root):
        if (cand / _RULES).is_file() and (cand / _RELATIONS).is_file():
            return cand
    raise DatasetMissingError(f"no CLUTRR rule store ({_RULES}, {_RELATIONS}) under {root}")


def load_rules(root: Path, domain: str = "family") -> KinshipRules:
    """Compositions, inverses, symmetric relations and surface words of one domain of the store."""
    store = _store_dir(Path(root))
    with open(store / _RULES, encoding="utf-8") as fh:
        rules = yaml.safe_load(fh) or {}
    with open(store / _RELATIONS, encoding="utf-8") as fh:
        relations = yaml.safe_load(fh) or {}
    compositions: dict[tuple[str, str], str] = {}
    for r1, row in ((rules.get("compositional") or {}).get(domain) or {}).items():
        for r2, r in (row or {}).items():
            compositions[(str(r1).strip(), str(r2).strip())] = str(r).strip()
    inverse: dict[str, str] = {}
    for a, b in ((rules.get("inverse-equivalence") or {}).get(domain) or {}).items():
        inverse[str(a).strip()] = str(b).strip()
        inverse[str(b).strip()] = str(a).strip()
    symmetric: set[str] = set()
    for a, b in ((rules.get("symmetric") or {}).get(domain) or {}).items():
        symmetric.add(str(a).strip())
        inverse[str(a).strip()] = str(b).strip()
    surface_to_relation: dict[str, str] = {}
    relation_to_surface: dict[tuple[str, str], str] = {}
    names: list[str] = []
    for rel, genders in relations.items():
        rel = str(rel).strip()
        if not isinstance(genders, dict) or rel == "no-relation":
            continue
        names.append(rel)
        for gender, spec in genders.items():
            word = str((spec or {}).get("rel", "")).strip().lower()
            if not word:
                continue
            word = _SPELLING_FIXES.get(word, word)
            surface_to_relation[word] = rel
            relation_to_surface[(rel, str(gender).strip().lower())] = word
    if not compositions or not surface_to_relation:
        raise IntegrityError(f"the CLUTRR store in {store} has no '{domain}' rules or relations; re-fetch it.")
    return KinshipRules(compositions=compositions, inverse=inverse, symmetric=symmetric, relations=names,
                        surface_to_relation=surface_to_relation, relation_to_surface=relation_to_surface)


def chain_length_of_file(path: Path) -> list[int]:
    """Chain lengths named in a file name: '1.2,1.3_train.csv' -> [2, 3]; '5_test.csv' -> [5]."""
    head = Path(path).name.rsplit("_", 1)[0]
    lengths = []
    for part in head.split(","):
        part = part.strip()
        m = re.fullmatch(r"(?:\d+\.)?(\d+)", part)
        if m:
            lengths.append(int(m.group(1)))
    return lengths


def find_story_files(root: Path, split: str) -> list[Path]:
    """All `*_{split}.csv` files in the data_*/ folders under root, sorted by chain length."""
    if split not in ("train", "test"):
        raise ConfigError(f"CLUTRR splits are 'train' and 'test' (got {split!r}).")
    files = sorted(p for d in sorted(Path(root).glob("data_*")) if d.is_dir() for p in d.glob(f"*_{split}.csv"))
    if not files:
        raise DatasetMissingError(f"no CLUTRR data_*/*_{split}.csv under {root}")
    return sorted(files, key=lambda p: (chain_length_of_file(p) or [0], p.name))


def _parse_genders(text: str) -> tuple[list[str], dict[str, str]]:
    people, genders = [], {}
    for item in str(text).split(","):
        if not item.strip():
            continue
        name, _, gender = item.partition(":")
        people.append(name.strip())
        genders[name.strip()] = gender.strip().lower()
    return people, genders


def parse_story_row(row: dict, sid: str, file_lengths: list[int] | None = None) -> KinshipStory:
    """One CSV row as a KinshipStory (chain length = number of story edges)."""
    query = _literal(row["query"], "query")
    if not (isinstance(query, tuple) and len(query) == 2):
        raise ConfigError(f"CLUTRR query must be a pair of names, got {row['query'][:60]!r}")
    edges = [tuple(int(x) for x in e) for e in _literal(row["story_edges"], "story_edges")]
    edge_types = [str(t).strip().lower() for t in _literal(row["edge_types"], "edge_types")]
    if len(edges) != len(edge_types):
        raise IntegrityError(f"CLUTRR row {sid}: {len(edges)} story edges but {len(edge_types)} edge types")
    people, genders = _parse_genders(row.get("genders", ""))
    meta = {"f_comb": row.get("f_comb", ""), "task_name": row.get("task_name", ""),
            "query_edge": _literal(row["query_edge"], "query_edge") if row.get("query_edge") else None,
            "proof_state": row.get("proof_state", ""), "clean_story": row.get("clean_story", ""),
            "id": row.get("id", "")}
    if file_lengths:
        meta["file_chain_lengths"] = file_lengths
    return KinshipStory(sid=sid, story=row["story"], query=(str(query[0]), str(query[1])),
                        target=str(row["target"]).strip().lower(), people=people, genders=genders,
                        edges=edges, edge_types=edge_types, chain_length=len(edges), meta=meta)


def read_stories(root: Path, split: str) -> tuple[list[KinshipStory], list[Path]]:
    """Every story of a split, in file order (files sorted by chain length)."""
    csv.field_size_limit(min(sys.maxsize, 2**31 - 1))
    files = find_story_files(root, split)
    stories: list[KinshipStory] = []
    for path in files:
        lengths = chain_length_of_file(path)
        with io.StringIO(read_text(path), newline="") as fh:  # a byte that is not UTF-8 names its line
            for i, row in enumerate(csv.DictReader(fh)):
                stories.append(parse_story_row(row, f"{path.stem}-{i:05d}", lengths))
    return stories, files
