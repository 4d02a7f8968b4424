"""WebQSP and CWQ questions with RoG's gold relation paths but no subgraph (the GNN-RAG repository's RoG files).

Files (github cmavro/GNN-RAG, `llm/results/...`; the shared copy gzips them, `.jsonl.gz`, and either form is read):

* `gen_rule_path/RoG-webqsp/RoG/{train,validation,test}/predictions_3_False.jsonl` and
  `gen_rule_path/RoG-cwq/RoG/test/predictions_2_False.jsonl`: one row a question, `{"id", "question",
  "ground_paths", "prediction", ...}`; `ground_paths` are RoG's gold relation paths, the relation sequences of the
  shortest topic-to-answer paths in the question's subgraph (an empty list or `[["NA"]]` where none exists).
  `prediction` (RoG's generated paths) is not read: it is another method's output.
* `KGQA-GNN-RAG/rearev-lmsr/RoG-{webqsp,cwq}/RoG/test/.../False/detailed_eval_result.jsonl`: the test questions'
  gold answers (`ground_truth`), attached where present.
* `tog/data/cwq.json` (github GasolSun36/ToG): CWQ's topic entities (`topic_entity` {mid: name}), attached where
  present.

RoG searched paths in an undirected graph, so a gold path has no step direction: each question's `chain` is its
first gold path with every step marked forward, `meta["gold_paths"]` holds all of them as relation lists (and
`meta["shortest_chains"]` as such chains, the key RoG's loader uses: relation knowledge votes among them), and
`meta["direction_known"]` is False. Chains compare by relation sequence here (`relation_path`).
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

from ..errors import DatasetFormatError, DatasetMissingError
from .items import KGQuestion
from .textfiles import decode_utf8

__all__ = ["QUESTION_FILES", "ANSWER_FILES", "CWQ_TOPICS", "find", "read_rows", "read_questions", "gold_paths",
           "relation_path"]

_GEN = "gnn-rag/llm/results/gen_rule_path"
_EVAL = "gnn-rag/llm/results/KGQA-GNN-RAG/rearev-lmsr"
#: (benchmark, split) -> the question file (without .gz)
QUESTION_FILES = {("webqsp", s): f"{_GEN}/RoG-webqsp/RoG/{s}/predictions_3_False.jsonl"
                  for s in ("train", "validation", "test")}
QUESTION_FILES[("cwq", "test")] = f"{_GEN}/RoG-cwq/RoG/test/predictions_2_False.jsonl"
#: (benchmark, split) -> the file with the gold answers (test only)
ANSWER_FILES = {("webqsp", "test"): f"{_EVAL}/RoG-webqsp/RoG/test/results_gen_rule_path_RoG-webqsp_RoG_test_"
                                    "predictions_3_False_jsonl/False/detailed_eval_result.jsonl",
                ("cwq", "test"): f"{_EVAL}/RoG-cwq/RoG/test/results_gen_rule_path_RoG-cwq_RoG_test_"
                                 "predictions_3_False_jsonl/False/detailed_eval_result.jsonl"}
CWQ_TOPICS = "tog/data/cwq.json"


def find(root: Path, rel: str) -> Path | None:
    """`rel` under root, gzipped (`.gz`, the shared copy) or as released; None when neither exists."""
    for path in (Path(root) / f"{rel}.gz", Path(root) / rel):
        if path.is_file():
            return path
    return None


def _text(path: Path) -> str:
    data = path.read_bytes()
    if path.suffix == ".gz":
        try:
            data = gzip.decompress(data)
        except (OSError, EOFError) as exc:
            raise DatasetFormatError(f"{path} is not a whole gzip file ({exc}); re-fetch it.") from None
    return decode_utf8(data, path)


def read_rows(path: Path) -> list[dict]:
    """The JSON objects of a .jsonl(.gz) file, one a line (blank lines skipped)."""
    rows = []
    for n, line in enumerate(_text(path).split("\n"), start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise DatasetFormatError(f"{path}, line {n}: not JSON ({exc.msg}); re-fetch it.") from None
        if not isinstance(row, dict):
            raise DatasetFormatError(f"{path}, line {n}: expected a JSON object.")
        rows.append(row)
    return rows


def gold_paths(raw) -> list[tuple[str, ...]]:
    """RoG's `ground_paths` as distinct relation tuples in file order ([] for none and for RoG's [["NA"]])."""
    out: dict[tuple[str, ...], None] = {}
    for path in raw or []:
        rels = tuple(str(r).strip() for r in (path or []) if str(r).strip())
        if rels and rels != ("NA",):
            out.setdefault(rels, None)
    return list(out)


def relation_path(chain) -> tuple[str, ...]:
    """A chain [(relation, forward), ...] as its relation sequence (how chains compare without directions)."""
    return tuple(str(step[0]) for step in chain or ())


def _answers(root: Path, benchmark: str, split: str) -> tuple[dict[str, list[str]], str | None]:
    rel = ANSWER_FILES.get((benchmark, split))
    path = find(root, rel) if rel else None
    if path is None:
        return {}, None
    return {str(r.get("id")): [str(a) for a in (r.get("ground_truth") or [])] for r in read_rows(path)}, path.name


def _cwq_topics(root: Path) -> tuple[dict[str, list[str]], str | None]:
    path = find(root, CWQ_TOPICS)
    if path is None:
        return {}, None
    try:
        data = json.loads(_text(path))
    except json.JSONDecodeError as exc:
        raise DatasetFormatError(f"{path} is not valid JSON ({exc.msg}); re-fetch it.") from None
    return {str(r.get("ID")): [str(n) for n in (r.get("topic_entity") or {}).values()] for r in data}, path.name


def read_questions(root: Path, benchmark: str, split: str, prefix: str = "") -> tuple[list[KGQuestion], dict]:
    """The questions of one split with their gold relation paths, answers and topic entities where the copy has them."""
    rel = QUESTION_FILES.get((benchmark, split))
    path = find(root, rel) if rel else None
    if path is None:
        raise DatasetMissingError(f"no {rel or f'{benchmark} {split} file'}(.gz) in {root}")
    answers, answer_file = _answers(root, benchmark, split)
    topics, topic_file = _cwq_topics(root) if benchmark == "cwq" else ({}, None)
    out: list[KGQuestion] = []
    for i, row in enumerate(read_rows(path)):
        qid = str(row.get("id") or f"{prefix or benchmark}-{split}-{i:05d}")
        if "question" not in row or "ground_paths" not in row:
            raise DatasetFormatError(f"{path}, row {i + 1}: no question or ground_paths; is it a RoG path file?")
        paths = gold_paths(row.get("ground_paths"))
        chain = [(r, True) for r in paths[0]] if paths else None
        out.append(KGQuestion(qid=qid, question=str(row["question"]), topic_entities=topics.get(qid, []),
                              answers=answers.get(qid, []), chain=chain, hops=len(paths[0]) if paths else 0,
                              qtype=None, meta={"gold_paths": [list(p) for p in paths], "direction_known": False,
                                                "shortest_chains": [[(r, True) for r in p] for p in paths],
                                                "file_row": i}))
    info = {"questions_file": path.name, "answers_file": answer_file, "topics_file": topic_file,
            "with_gold_paths": sum(1 for q in out if q.meta["gold_paths"]),
            "without_gold_paths": sum(1 for q in out if not q.meta["gold_paths"]),
            "with_answers": sum(1 for q in out if q.answers), "subgraphs": False}
    return out, info
