"""Passage Recall@2 / Recall@5 of vector retrieval + LLM rerank and its baselines, on one dataset.

    python benchmarks/vector_rerank_recall.py --dataset musique --variants naive,expand --limit 100 \
        --out benchmarks/results/vector_rerank_musique.json
    python benchmarks/vector_rerank_recall.py --dataset musique --variants rerank,rerank-padded \
        --llm qwen2.5-coder-0.5b --out benchmarks/results/vector_rerank_musique.json   # merges into the same file

Gold passages are matched by title for HotpotQA and 2Wiki and by title + text for MuSiQue.
Per-question records (seeds, expansion, prompt, raw answer, passages, timings) go to
results/<run_name>/ through RunRecorder, so an interrupted run resumes; the JSON is rewritten
after every slice of questions with status "running (k/n)" and "ok" at the end. `--pool-per-question N`
builds the index on the gold passages + top-N dense passages per question (needed where OpenIE
with a CPU LLM cannot cover the whole corpus); the pool is recorded in the JSON.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

from kgrag_utils.demos import DEMO_POOLS  # noqa: E402
from kgrag_utils.datasets.arguments import (add_dataset_arguments, dataset_from_args,  # noqa: E402
                                            evaluation_params_from_args)
from kgrag_utils.embeddings import load_embedder  # noqa: E402
from kgrag_utils.methods.vector_rerank.config import MEASURED_NAIVE_MUSIQUE
from kgrag_utils.methods.vector_rerank.prompts import DEMO_ANSWER_VERSION, PROMPT_VERSION
from kgrag_utils.methods.vector_rerank.published import PUBLISHED_RECALL5
from kgrag_utils.methods.vector_rerank import VectorRerank, VectorRerankConfig, summarize
from kgrag_utils import settings  # noqa: E402
from kgrag_utils.records import RunRecorder, environment_info, params_hash, to_jsonable, write_result  # noqa: E402

_KNOBS = ("entity_topk", "entity_min_score", "relation_topk", "degree", "candidate_cap", "select_n", "final_k",
          "entity_extraction", "pool_per_question", "fill_order",
          "rerank_max_new_tokens", "samples", "sample_temperature")


def parse_args(argv=None) -> argparse.Namespace:
    d = VectorRerankConfig()
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_dataset_arguments(ap, kinds=("passages",), default="musique")  # + --option questions=FILE
    ap.add_argument("--variants", default="all", help="all, or a comma list of naive,expand,rerank,rerank-padded")
    ap.add_argument("--limit", type=int, default=None, help="questions (seeded sample); default all")
    ap.add_argument("--seed", type=int, default=d.seed)
    ap.add_argument("--llm", default=d.llm_preset, help="LLM preset for the rerank variants and OpenIE")
    ap.add_argument("--llm-backend", default=d.llm_backend or None)
    ap.add_argument("--structured", default="", choices=("", "off", "schema"),
                    help="decoding mode (recorded): off = free text, schema = JSON-schema-constrained; '' = the preset's")
    ap.add_argument("--llm-threads", type=int, default=None,
                    help="llama.cpp threads (1 avoids spin-waiting on a shared, oversubscribed CPU)")
    ap.add_argument("--embedder", default=d.embedder)
    ap.add_argument("--vector-store", default=d.vector_store, choices=("faiss", "milvus"))
    ap.add_argument("--milvus-uri", default=d.milvus_uri)
    for knob in _KNOBS:
        default = getattr(d, knob)
        ap.add_argument("--" + knob.replace("_", "-"), type=type(default), default=default)
    ap.add_argument("--openie-batch", type=int, default=4)
    ap.add_argument("--slice", type=int, default=10, help="questions between JSON checkpoints")
    ap.add_argument("--max-new", type=int, default=0,
                    help="stop after about this many new questions (whole slices; 0: all); the run stays 'running' "
                         "and the same command resumes it (chunks that let a shared LLM lock change hands)")
    ap.add_argument("--demos", default=d.demos, choices=("fixed", "nearest"),
                    help="rerank prompt: the fixed example, or + the training questions nearest to each question")
    ap.add_argument("--shots", type=int, default=d.shots, help="--demos nearest: training questions shown")
    ap.add_argument("--demo-pool", default=d.demo_pool, choices=DEMO_POOLS,
                    help="--demos nearest: from the training split, or from the other fold of the evaluated questions "
                         "(crossfit: for a data copy without a training split; labelled, not a training-split number)")
    ap.add_argument("--candidate-titles", default="true" if d.candidate_titles else "false", choices=("true", "false"),
                    help="rerank prompt: each candidate fact followed by the title of its passage")
    ap.add_argument("--run-name", default=None)
    ap.add_argument("--out", required=True, type=Path, help="result JSON (a relative path resolves from the repo root)")
    ap.add_argument("--no-progress", action="store_true")
    return ap.parse_args(argv)


def _load_out(path: Path) -> dict:
    if path.exists():
        try:
            return json.loads(path.read_text(encoding="utf-8"))
        except json.JSONDecodeError:
            pass
    return {}


def main(argv=None) -> int:
    args = parse_args(argv)
    out_path = args.out if args.out.is_absolute() else settings.repo_root() / args.out  # where write_result writes
    ds = dataset_from_args(args, limit=args.limit, seed=args.seed)
    cfg = VectorRerankConfig(dataset=args.dataset, limit=len(ds.items), seed=args.seed, vector_store=args.vector_store,
                             milvus_uri=args.milvus_uri, embedder=args.embedder, llm_preset=args.llm,
                             llm_backend=args.llm_backend or "", llm_structured=args.structured, variants=args.variants,
                             demos=args.demos, shots=args.shots, demo_pool=args.demo_pool,
                             candidate_titles=args.candidate_titles == "true", **{k: getattr(args, k) for k in _KNOBS})
    progress = not args.no_progress
    gold_key = ds.traits.gold_unit  # how gold passages are matched: the dataset's trait (datasets/traits.py)
    embedder = load_embedder(args.embedder)
    pool = None
    if cfg.demos == "nearest":  # refuses (one line) where the dataset has no training split with supporting facts
        from kgrag_utils.methods.vector_rerank.stages.demos import rerank_demo_pool

        pool = rerank_demo_pool(ds, embedder, pool=cfg.demo_pool)
    llm = None
    needs_openie = ds.triples is None and any(v != "naive" for v in cfg.variants_for("passages"))
    if cfg.needs_llm or needs_openie:
        from kgrag_utils.llm import load_llm

        opts = {"n_threads": args.llm_threads} if args.llm_threads else {}
        llm = load_llm(args.llm, backend=args.llm_backend, structured=args.structured or None, **opts)
    t0 = time.perf_counter()  # the protocol's prepare: the index (released triples or OpenIE) and the method
    method = VectorRerank.prepare(cfg, ds, llm=llm, embedder=embedder, progress=progress, openie_batch=args.openie_batch,
                                  demo_pool=pool)
    t_index = time.perf_counter() - t0
    index, corpus_info = method.index, method.corpus_info
    evaluation = evaluation_params_from_args(args)  # split and options: another question file is another run
    run_params = {**cfg.run_key(), "limit": args.limit, "n_corpus": index.num_passages, **evaluation}
    run_params.pop("answer_max_new_tokens")  # KG questions only: passage runs keep their names (and resume)
    if cfg.needs_llm:  # a new prompt is a new run (never resumed from another prompt's records)
        run_params["prompt_version"] = PROMPT_VERSION
        if cfg.demos == "nearest":  # a new demonstration wording is a new run too
            run_params["demo_answer_version"] = DEMO_ANSWER_VERSION
    run_name = args.run_name or f"vector_rerank_bench-{args.dataset}-{params_hash(run_params)[:10]}"
    rec = RunRecorder("vector_rerank", run_params, run_name=run_name)

    def write(records, status: str) -> None:
        out = _load_out(out_path)
        same = (out.get("dataset") == args.dataset and out.get("limit") == args.limit and out.get("seed") == args.seed
                and (out.get("evaluation") or {}) == evaluation)
        if not same:
            out = {}
        out.update({
            "benchmark": "vector_rerank_recall", "dataset": args.dataset, "limit": args.limit, "seed": args.seed,
            **({"evaluation": evaluation} if evaluation else {}),
            "n_questions": len(ds.items), "gold_match": "title" if gold_key == "title" else "title + text (pid)",
            "metric": "set-based passage recall: |gold in top k| / |gold|, averaged over all questions",
            "reference": {"measured_naive_minilm_musique_100q": MEASURED_NAIVE_MUSIQUE,
                          "published_recall5": PUBLISHED_RECALL5.get(args.dataset),
                          "published_setup": "gpt-5-mini rerank, bge-large embeddings, graph results padded with naive"},
        })
        runs = [r for r in out.get("runs", []) if r.get("params_hash") != rec.params_hash]
        summary = summarize(records)
        runs.append({
            "run_name": rec.run_name, "params_hash": rec.params_hash, "status": status,
            "updated": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
            "variants": list(cfg.variants_for("passages")), "config": cfg.to_dict(), "n_done": len(records),
            "prompt_version": run_params.get("prompt_version"),
            "corpus": {**corpus_info, **index.info}, "index_build_seconds": round(t_index, 2),
            "llm": None if llm is None else {"preset": args.llm, "backend": llm.backend_name, "model": llm.model_id,
                                             "stats": llm.stats},
            "summary": summary,
        })
        out["runs"] = runs
        out["environment"] = environment_info()
        # per question and variant, for `kgrag reproduce` (this invocation's run; the file may merge others)
        out["outcomes"] = {v: {str(r["id"]): {k: x for k, x in (r.get("variants") or {}).get(v, {}).items()
                                              if k.startswith("recall@")} for r in records if "id" in r}
                           for v in cfg.variants_for("passages")}
        out.pop("provenance", None)  # this write's own (command, arguments, commit, environment)
        write_result(out_path, to_jsonable(out), args)

    questions = list(ds.items)
    records = []
    done_before = len(rec.done_ids & {q.qid for q in questions})
    for s in range(0, len(questions), max(1, args.slice)):
        records = method.run(questions[: s + args.slice], recorder=rec, progress=progress)
        write(records, "ok" if s + args.slice >= len(questions) else f"running ({len(records)}/{len(questions)})")
        if args.max_new and len(records) - done_before >= args.max_new and len(records) < len(questions):
            rec.close()
            index.close()
            print(f"{args.dataset}: stopped after {len(records) - done_before} new questions ({len(records)}/"
                  f"{len(questions)} done): the same command resumes")
            return 0
    summary = summarize(records)
    rec.finish(summary=summary, tokens=llm.stats if llm is not None else None)
    index.close()
    for v, s in summary["variants"].items():
        print(f"{args.dataset} {v:>14}: Recall@2 {100 * s['recall@2']:.1f}  Recall@5 {100 * s['recall@5']:.1f}  "
              f"(n={s['n']}, failed={s['n_failed']})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
