"""Run the SimGRAG reference code (YZ-Cai/SimGRAG, passed by path) on given MetaQA questions, stage by stage.

Runs inside the peer's environment (benchmarks/peers/setup.sh simgrag-ref), started by
benchmarks/peers/simgrag_ref.py, which writes the inputs: a config in the reference's own format and
a raw-data folder in its own layout (kb.txt, the k-hop qa_test.txt holding exactly the evaluated
questions). Everything that decides an answer is the reference's: its MetaQA loader, its Indexer,
its Retriever (greedy mode, its top-k and timeout), its rewrite and answer prompts with their shots,
its graph extraction and its answer check. This file only does what its query script does per
question, split into stages that resume from their JSON lines:

  index     the reference's Indexer.build_index over the KB (node and relation embeddings into Milvus)
  rewrite   its rewrite prompt -> the LLM -> extract_graph
  retrieve  Retriever.retrieve(query_graph, mode='greedy'); for questions whose evidence misses every
            gold answer, the same retriever on the gold pattern too (tells a pattern error from a
            retrieval error; not part of the reference's pipeline, recorded apart)
  answer    its answer prompt over the evidences -> the LLM -> check_answer

Three adaptations, all outside the reference's files: Milvus goes to a Milvus Lite file instead of a
server at localhost:19530; its collections take the embedder's dimension instead of the hard-coded
768 (nomic-embed-text-v1's); and its HNSW index (M 64, efConstruction 512) becomes FLAT, the exact
search HNSW approximates, because Milvus Lite builds no HNSW. Each LLM reply's finish reason and token usage are recorded
beside the reply.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import traceback

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from worker_io import append_jsonl, pending, read_jsonl  # noqa: E402


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


def stage_index(args, configs, dataset, _questions) -> None:
    from src.indexer import Indexer

    t0 = time.perf_counter()
    Indexer(configs).build_index(dataset.get_KG())
    print(f"index built in {time.perf_counter() - t0:.1f} s", flush=True)


def stage_rewrite(args, configs, _dataset, questions) -> None:
    import prompts.rewrite_metaQA
    from src.utils import extract_graph

    out = os.path.join(args.out_dir, "rewrite.jsonl")
    todo = list(pending(questions, out))[: args.max_new or None]
    if not todo:
        return
    llm = RecordingLLM(configs)
    for i, q in enumerate(todo, 1):
        row = {"id": q["id"], "query": q["query"], "groundtruths": q["groundtruths"]}
        try:
            t0 = time.time()
            row["rewrite_prompt"] = prompts.rewrite_metaQA.get(q["query"], shot=configs["rewrite_shot"])
            row["rewrite_llm_output"], row["rewrite_llm"] = llm.chat(row["rewrite_prompt"])
            row["rewrite_time"] = time.time() - t0
            row["query_graph"] = extract_graph(row["rewrite_llm_output"])
        except Exception as e:  # the reference records the message and moves on
            row["error_stage"], row["error_message"] = "rewrite", str(e)
        append_jsonl(out, row)
        print(f"rewrite {i}/{len(todo)} {q['id']}", flush=True)


def _evidence_names(results) -> set:
    return {x for _score, graph, _reuse in results for h, _r, t in graph for x in (h, t)}


def _hit(results, golds) -> bool:
    names = {n.lower() for n in _evidence_names(results)}
    return any(g.lower() in names for g in golds)


def stage_retrieve(args, configs, dataset, questions) -> None:
    from src.retriever import Retriever

    rewrites = {r["id"]: r for r in read_jsonl(os.path.join(args.out_dir, "rewrite.jsonl"))}
    out = os.path.join(args.out_dir, "retrieve.jsonl")
    todo = [q for q in pending(questions, out) if q["id"] in rewrites][: args.max_new or None]
    if not todo:
        return
    retriever = Retriever(configs, dataset.get_KG())
    for i, q in enumerate(todo, 1):
        rw = rewrites[q["id"]]
        row = {"id": q["id"]}
        if "query_graph" in rw:
            try:
                t0 = time.time()
                row["retrieval_details"] = retriever.retrieve(rw["query_graph"], mode="greedy")
                row["evidences"] = [each[1] for each in row["retrieval_details"]["results"]]
                row["retrieval_time"] = time.time() - t0
            except Exception as e:
                row["error_stage"], row["error_message"] = "retrieve", str(e)
        hit = "evidences" in row and _hit(row["retrieval_details"]["results"], q["groundtruths"])
        row["evidence_hit"] = hit
        if not hit and q.get("oracle_graph"):  # our diagnosis, not the reference's pipeline
            try:
                t0 = time.time()
                gold = retriever.retrieve(q["oracle_graph"], mode="greedy")
                row["oracle_evidence_hit"] = _hit(gold["results"], q["groundtruths"])
                row["oracle_evidences"] = [each[1] for each in gold["results"]]
                row["oracle_retrieval_time"] = time.time() - t0
            except Exception as e:
                row["oracle_evidence_hit"], row["oracle_error"] = False, str(e)
        append_jsonl(out, row)
        print(f"retrieve {i}/{len(todo)} {q['id']} hit={hit} {row.get('retrieval_time', 0):.2f}s", flush=True)


def stage_answer(args, configs, _dataset, questions) -> None:
    import prompts.answer_metaQA
    from src.utils import check_answer

    retrieved = {r["id"]: r for r in read_jsonl(os.path.join(args.out_dir, "retrieve.jsonl"))}
    out = os.path.join(args.out_dir, "answer.jsonl")
    todo = [q for q in pending(questions, out) if q["id"] in retrieved][: args.max_new or None]
    ready = [q for q in todo if "evidences" in retrieved[q["id"]]]
    for q in todo:  # no evidences (pattern or retrieval error): no answer call, as in the reference
        if "evidences" not in retrieved[q["id"]]:
            append_jsonl(out, {"id": q["id"], "answered": False, "correct": False})
    if not ready:
        return
    llm = RecordingLLM(configs)
    for i, q in enumerate(ready, 1):
        row = {"id": q["id"], "answered": True}
        try:
            t0 = time.time()
            row["answer_prompt"] = prompts.answer_metaQA.get(q["query"], retrieved[q["id"]]["evidences"],
                                                             shot=configs["answer_shot"])
            row["answer_llm_output"], row["answer_llm"] = llm.chat(row["answer_prompt"])
            row["answer_time"] = time.time() - t0
            row["correct"] = check_answer(row["answer_llm_output"], q["groundtruths"])
        except Exception as e:
            row["error_stage"], row["error_message"], row["correct"] = "answer", str(e), False
        append_jsonl(out, row)
        print(f"answer {i}/{len(ready)} {q['id']} correct={row['correct']}", flush=True)


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
    ref = os.path.abspath(args.reference_dir)
    sys.path.insert(0, ref)
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
