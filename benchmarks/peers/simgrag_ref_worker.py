"""Run the SimGRAG reference code (YZ-Cai/SimGRAG, passed by path) on given MetaQA questions, stage by stage.

Runs in the peer's environment, started by benchmarks/peers/simgrag_ref.py, which writes a config in the
reference's format and its raw-data layout (kb.txt, a qa_test.txt of exactly these questions). Everything that
decides an answer is the reference's (loader, Indexer, greedy Retriever, prompts, graph extraction, answer check);
this file does what its query script does per question, in stages that resume from their JSON lines:
index (Indexer.build_index), rewrite (its prompt, the LLM, extract_graph), retrieve (greedy; where the evidence
misses every gold answer, also on the gold pattern: our diagnosis, recorded apart) and answer (its prompt, the
LLM, check_answer). Adaptations (docs/PEERS.md): Milvus Lite instead of a server, collections of the embedder's
dimension instead of 768, FLAT instead of HNSW (Milvus Lite builds none). Each reply's finish reason and usage
are recorded beside it.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import sys
import time
import traceback

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from worker_io import read_jsonl, run_pending  # noqa: E402


def patch_milvus(uri: str, dim: int) -> None:
    """Point the reference's VectorStore at a Milvus Lite file with collections of dimension `dim`."""
    import pymilvus
    import src.vecdb

    class LiteClient(pymilvus.MilvusClient):
        def __init__(self, uri_ignored=None, **kw):  # the reference passes uri="http://localhost:19530"
            kw.pop("uri", None)
            super().__init__(uri=uri, **kw)

        @staticmethod
        def create_schema(**kw):
            schema = pymilvus.MilvusClient.create_schema(**kw)
            add = schema.add_field

            def add_field(field_name, datatype, **fkw):
                if fkw.get("dim") == 768:
                    fkw["dim"] = dim
                return add(field_name, datatype, **fkw)

            schema.add_field = add_field
            return schema

        @staticmethod
        def prepare_index_params(**kw):  # Milvus Lite builds FLAT, IVF_FLAT or AUTOINDEX only: HNSW becomes FLAT
            params = pymilvus.MilvusClient.prepare_index_params(**kw)
            add = params.add_index

            def add_index(field_name, index_type="", index_name="", **ikw):
                if index_type == "HNSW":
                    index_type, ikw = "FLAT", {k: v for k, v in ikw.items() if k != "params"}
                return add(field_name, index_type=index_type, index_name=index_name, **ikw)

            params.add_index = add_index
            return params

    src.vecdb.MilvusClient = LiteClient


class RecordingLLM:
    """The reference's LLM class, its chat unchanged; each reply's finish reason and usage are kept."""

    def __init__(self, configs):
        from src.llm import LLM

        self.llm = LLM(configs)  # its constructor says "Hello!" once, as in the reference
        self.last = {}
        create = self.llm.client.chat.completions.create

        def recording_create(**kw):
            t0 = time.perf_counter()
            resp = create(**kw)
            self.last = {"finish_reason": resp.choices[0].finish_reason, "seconds": round(time.perf_counter() - t0, 3),
                         "usage": resp.usage.model_dump() if resp.usage is not None else None}
            return resp

        self.llm.client.chat.completions.create = recording_create

    def chat(self, text: str) -> tuple[str, dict]:
        self.last = {}
        out = self.llm.chat(text)
        return out, dict(self.last)


def load(args):
    configs = json.load(open(args.config, encoding="utf-8"))
    from src.dataset import MetaQA

    dataset = MetaQA(configs)  # the reference's loader: its KG from kb.txt, its queries (brackets removed)
    questions = [json.loads(line) for line in open(args.questions, encoding="utf-8")]
    queries, golds = dataset.get_queries(), dataset.get_groundtruths()
    if len(queries) != len(questions):
        raise SystemExit(f"the reference loaded {len(queries)} queries, the harness wrote {len(questions)}")
    for q, query, gt in zip(questions, queries, golds):
        q["query"], q["groundtruths"] = query, gt
    return configs, dataset, questions


def _hit(results, golds) -> bool:
    names = {x.lower() for _score, graph, _reuse in results for h, _r, t in graph for x in (h, t)}
    return any(g.lower() in names for g in golds)


def _stage_file(args, name: str) -> str:
    return os.path.join(args.out_dir, f"{name}.jsonl")


def stage_index(args, configs, dataset, _questions) -> None:
    from src.indexer import Indexer

    t0 = time.perf_counter()
    Indexer(configs).build_index(dataset.get_KG())
    print(f"index built in {time.perf_counter() - t0:.1f} s", flush=True)


def stage_rewrite(args, configs, _dataset, questions) -> None:
    import prompts.rewrite_metaQA
    from src.utils import extract_graph

    llm = functools.cache(lambda: RecordingLLM(configs))  # made (and greeted) only when a question needs it

    def one(q):
        row = {"id": q["id"], "query": q["query"], "groundtruths": q["groundtruths"]}
        try:
            t0 = time.time()
            row["rewrite_prompt"] = prompts.rewrite_metaQA.get(q["query"], shot=configs["rewrite_shot"])
            row["rewrite_llm_output"], row["rewrite_llm"] = llm().chat(row["rewrite_prompt"])
            row["rewrite_time"] = time.time() - t0
            row["query_graph"] = extract_graph(row["rewrite_llm_output"])
        except Exception as e:  # the reference records the message and moves on
            row["error_stage"], row["error_message"] = "rewrite", str(e)
        return row

    run_pending(questions, _stage_file(args, "rewrite"), one, args.max_new, "rewrite ")


def _retrieve(retriever, graph, golds, prefix: str, row: dict) -> None:
    """One greedy retrieval into row[prefix + ...]: its evidences, whether they hold a gold answer, its time."""
    t0 = time.time()
    details = retriever.retrieve(graph, mode="greedy")
    if not prefix:
        row["retrieval_details"] = details
    row[prefix + "evidences"] = [each[1] for each in details["results"]]
    row[prefix + "evidence_hit"] = _hit(details["results"], golds)
    row[prefix + "retrieval_time"] = time.time() - t0


def stage_retrieve(args, configs, dataset, questions) -> None:
    from src.retriever import Retriever

    rewrites = {r["id"]: r for r in read_jsonl(_stage_file(args, "rewrite"))}
    retriever = functools.cache(lambda: Retriever(configs, dataset.get_KG()))

    def one(q):
        row = {"id": q["id"], "evidence_hit": False}
        if "query_graph" in rewrites[q["id"]]:
            try:
                _retrieve(retriever(), rewrites[q["id"]]["query_graph"], q["groundtruths"], "", row)
            except Exception as e:
                row["error_stage"], row["error_message"] = "retrieve", str(e)
        if not row["evidence_hit"] and q.get("oracle_graph"):  # our diagnosis, not the reference's pipeline
            try:
                _retrieve(retriever(), q["oracle_graph"], q["groundtruths"], "oracle_", row)
            except Exception as e:
                row["oracle_evidence_hit"], row["oracle_error"] = False, str(e)
        return row

    run_pending([q for q in questions if q["id"] in rewrites], _stage_file(args, "retrieve"), one, args.max_new,
                "retrieve ")


def stage_answer(args, configs, _dataset, questions) -> None:
    import prompts.answer_metaQA
    from src.utils import check_answer

    retrieved = {r["id"]: r for r in read_jsonl(_stage_file(args, "retrieve"))}
    llm = functools.cache(lambda: RecordingLLM(configs))

    def one(q):
        evidences = retrieved[q["id"]].get("evidences")
        if evidences is None:  # a pattern or retrieval error: no answer call, as in the reference
            return {"id": q["id"], "answered": False, "correct": False}
        row = {"id": q["id"], "answered": True}
        try:
            t0 = time.time()
            row["answer_prompt"] = prompts.answer_metaQA.get(q["query"], evidences, shot=configs["answer_shot"])
            row["answer_llm_output"], row["answer_llm"] = llm().chat(row["answer_prompt"])
            row["answer_time"] = time.time() - t0
            row["correct"] = check_answer(row["answer_llm_output"], q["groundtruths"])
        except Exception as e:
            row["error_stage"], row["error_message"], row["correct"] = "answer", str(e), False
        return row

    run_pending([q for q in questions if q["id"] in retrieved], _stage_file(args, "answer"), one, args.max_new,
                "answer ")


STAGES = {"index": stage_index, "rewrite": stage_rewrite, "retrieve": stage_retrieve, "answer": stage_answer}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--reference-dir", required=True)
    ap.add_argument("--config", required=True)
    ap.add_argument("--questions", required=True, help="JSON lines: id, golds, oracle_graph (in file order)")
    ap.add_argument("--out-dir", required=True)
    ap.add_argument("--milvus-uri", required=True)
    ap.add_argument("--dim", type=int, required=True)
    ap.add_argument("--stages", default="rewrite,retrieve,answer")
    ap.add_argument("--max-new", type=int, default=0, help="at most this many new questions per stage (0: all)")
    args = ap.parse_args(argv)
    sys.path.insert(0, os.path.abspath(args.reference_dir))
    os.makedirs(args.out_dir, exist_ok=True)
    os.chdir(args.out_dir)  # nothing is written into the reference checkout
    patch_milvus(args.milvus_uri, args.dim)
    configs, dataset, questions = load(args)
    for stage in args.stages.split(","):
        try:
            STAGES[stage](args, configs, dataset, questions)
        except Exception:
            traceback.print_exc()
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
