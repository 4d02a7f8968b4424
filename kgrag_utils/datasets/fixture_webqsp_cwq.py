"""The WebQSP_CWQ folder of the shared data copy in miniature: RoG's path files (GNN-RAG), the test answers, ToG's
CWQ topic entities and the whole-subgraph file, written from the RoG fixture's questions (`fixture_graphs`).

Layout (as in the data copy, every file gzipped with a zero timestamp so the bytes never change):
* gnn-rag/llm/results/gen_rule_path/RoG-webqsp/RoG/{train,validation,test}/predictions_3_False.jsonl.gz and
  .../RoG-cwq/RoG/test/predictions_2_False.jsonl.gz: {"id", "question", "prediction", "ground_paths", ...}, the
  ground paths being the relation sequences of each question's shortest topic-to-answer paths (as RoG wrote them);
* .../KGQA-GNN-RAG/.../detailed_eval_result.jsonl.gz (test): {"id", "ground_truth", ...};
* tog/data/cwq.json.gz: [{"ID", "question", "topic_entity": {mid: name}, "answer"}];
* gcr-dca/webqsp_test18_rog_format.jsonl.gz: the WebQSP test questions in RoG form, graph included.

The content says nothing about the real data; it exercises the loaders (`rog_paths`, `rog.read_jsonl_table`).
"""

from __future__ import annotations

import gzip
import io
import json

import numpy as np

from .fixture_graphs import rog_questions
from .rog import kg_from_triples_arrays, shortest_chains
from .rog_paths import ANSWER_FILES, CWQ_TOPICS, QUESTION_FILES

__all__ = ["generate_webqsp_cwq", "FOLDER", "TEST18"]

FOLDER = "WebQSP_CWQ"
TEST18 = "gcr-dca/webqsp_test18_rog_format.jsonl.gz"


def _gz(text: str) -> bytes:
    buf = io.BytesIO()
    with gzip.GzipFile(fileobj=buf, mode="wb", mtime=0) as fh:
        fh.write(text.encode("utf-8"))
    return buf.getvalue()


def _jsonl(rows: list[dict]) -> bytes:
    return _gz("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))


def _ground_paths(row: dict) -> list[list[str]]:
    graph = np.asarray(row["graph"], dtype=object).reshape(-1, 3)
    kg = kg_from_triples_arrays(graph[:, 0], graph[:, 1], graph[:, 2])
    chains, _ = shortest_chains(kg, row["q_entity"], row["a_entity"])
    return [[r for r, _ in c] for c in chains] or [["NA"]]


def _path_row(row: dict) -> dict:
    return {"id": row["id"], "question": row["question"], "prediction": [], "ground_paths": _ground_paths(row),
            "input": "", "raw_output": {}}


def generate_webqsp_cwq(seed: int = 0) -> dict[str, bytes]:
    """Relative path (under the sample root) -> bytes of every file of the miniature WebQSP_CWQ folder."""
    files: dict[str, bytes] = {}
    for (bench, split), rel in QUESTION_FILES.items():
        rows = rog_questions(bench)[split]
        files[f"{FOLDER}/{rel}.gz"] = _jsonl([_path_row(r) for r in rows])
        if (bench, split) in ANSWER_FILES:
            files[f"{FOLDER}/{ANSWER_FILES[(bench, split)]}.gz"] = _jsonl(
                [{"id": r["id"], "prediction": [], "ground_truth": r["answer"], "hit": 0} for r in rows])
    cwq = [{"ID": r["id"], "question": r["question"], "answer": r["answer"][0],
            "topic_entity": {f"m.fixture{i}{k}": name for k, name in enumerate(r["q_entity"])}}
           for i, r in enumerate(rog_questions("cwq")["test"])]
    files[f"{FOLDER}/{CWQ_TOPICS}.gz"] = _gz(json.dumps(cwq, ensure_ascii=False))
    files[f"{FOLDER}/{TEST18}"] = _jsonl([{k: r[k] for k in ("id", "question", "answer", "q_entity", "a_entity", "graph")}
                                          for r in rog_questions("webqsp")["test"]])
    return files
