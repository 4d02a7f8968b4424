"""Vector retrieval + LLM rerank on a KG question dataset: answers from the reranked facts (Hits@1).

    python benchmarks/vector_rerank_kgqa.py --dataset metaqa-2hop --limit 100 --variants naive,expand,rerank \
        --entity-extraction lexical --degree 2 --out benchmarks/results/vector_rerank_kgqa.json

The index is the dataset's KG (entities, facts "head relation tail"; no passages). Per-question
records go to results/<run_name>/ through RunRecorder (method "vector_rerank"), so an interrupted
run resumes and `kgrag_utils.report` reads the finished one; the summary (fact_hit for every
variant, strict hits@1 and lenient containment for rerank) is rewritten to --out after every
slice of questions, with status "running (k/n)" and "ok" at the end.
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
from kgrag_utils.methods.vector_rerank.prompts import ANSWER_PROMPT_VERSION, DEMO_ANSWER_VERSION, PROMPT_VERSION
from kgrag_utils.methods.vector_rerank import VectorRerank, VectorRerankConfig, summarize
from kgrag_utils.methods.vector_rerank.stages.kgqa import kgqa_variants
from kgrag_utils.records import RunRecorder, environment_info, params_hash, to_jsonable, write_result  # noqa: E402

_KNOBS = ("entity_topk", "entity_min_score", "relation_topk", "degree", "candidate_cap", "select_n", "final_k",
          "entity_extraction", "rerank_max_new_tokens", "answer_max_new_tokens")


def parse_args(argv=None) -> argparse.Namespace:
    d = VectorRerankConfig()
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_dataset_arguments(ap, kinds=("kgqa",), default="metaqa-2hop")  # any registered KG dataset; --option key=value
    ap.add_argument("--variants", default="all", help="all (= naive,expand,rerank) or a comma list of them")
    ap.add_argument("--limit", type=int, default=None, help="questions (seeded sample); default all")
    ap.add_argument("--seed", type=int, default=d.seed)
    ap.add_argument("--llm", default=d.llm_preset, help="LLM preset for the rerank and answer calls")
    ap.add_argument("--llm-backend", default=d.llm_backend or None)
    ap.add_argument("--embedder", default=d.embedder)
    ap.add_argument("--vector-store", default=d.vector_store, choices=("faiss", "milvus"))
    for knob in _KNOBS:
        default = getattr(d, knob)
        ap.add_argument("--" + knob.replace("_", "-"), type=type(default), default=default)
    ap.add_argument("--slice", type=int, default=8, help="questions between checkpoints of --out")
    ap.add_argument("--demos", default=d.demos, choices=("fixed", "nearest"),
                    help="rerank prompt: the fixed example, or + the training questions nearest to each question")
    ap.add_argument("--shots", type=int, default=d.shots, help="--demos nearest: training questions shown")
    ap.add_argument("--demo-pool", default=d.demo_pool, choices=DEMO_POOLS,
                    help="--demos nearest: from the training split, or from the other fold of the evaluated questions "
                         "(crossfit: for a data copy without a training split; labelled, not a training-split number)")
    ap.add_argument("--run-name", default=None)
    ap.add_argument("--out", type=Path, default=None)
    ap.add_argument("--no-progress", action="store_true")
    return ap.parse_args(argv)


def main(argv=None) -> int:
    args = parse_args(argv)
    ds = dataset_from_args(args, limit=args.limit, seed=args.seed)
    cfg = VectorRerankConfig(dataset=args.dataset, split=args.split, limit=len(ds.items), seed=args.seed,
                             vector_store=args.vector_store, embedder=args.embedder, llm_preset=args.llm,
                             llm_backend=args.llm_backend or "", variants=args.variants,
                             demos=args.demos, shots=args.shots, demo_pool=args.demo_pool,
                             **{k: getattr(args, k) for k in _KNOBS})
    variants = kgqa_variants(cfg)
    llm = None
    if "rerank" in variants:
        from kgrag_utils.llm import load_llm

        llm = load_llm(args.llm, backend=args.llm_backend)
    step = max(1, args.slice)
    t0 = time.perf_counter()  # the protocol's prepare: the KG's facts indexed, FactRerank over them
    method = VectorRerank.prepare(cfg.replace(batch_size=step), ds, llm=llm, embedder=load_embedder(args.embedder),
                                  progress=not args.no_progress)  # one slice per batch; builds a nearest pool too
    t_index = time.perf_counter() - t0
    index, info = method.index, method.corpus_info
    params = {**cfg.run_key(), "limit": args.limit, "task": "kgqa", "variants": list(variants),
              **evaluation_params_from_args(args, default_split=None)}  # options: another file is another run
    if llm is not None:  # a new prompt is a new run (never resumed from another prompt's records)
        params.update({"prompt_version": PROMPT_VERSION, "answer_prompt_version": ANSWER_PROMPT_VERSION})
        if cfg.demos == "nearest":  # a new demonstration wording is a new run too
            params["demo_answer_version"] = DEMO_ANSWER_VERSION
    else:
        params["llm_preset"] = ""
    rec = RunRecorder("vector_rerank", params, run_name=args.run_name or
                      f"vector_rerank_kgqa-{args.dataset}-{params_hash(params)[:10]}")
    print(f"{index} built in {t_index:.1f} s; run {rec.run_name}: {len(rec.done_ids)} of {len(ds.items)} done", flush=True)

    def write(records, status: str) -> None:
        if args.out is None:
            return
        out = json.loads(args.out.read_text(encoding="utf-8")) if args.out.exists() else {}
        runs = [r for r in out.get("runs", []) if r.get("run_name") != rec.run_name]
        runs.append({"run_name": rec.run_name, "status": status, "dataset": args.dataset, "split": args.split,
                     "limit": args.limit, "seed": args.seed, "n_done": len(records),
                     "updated": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"), "params": params,
                     "index": {**info, **index.info, "build_seconds": round(t_index, 2)},
                     "llm": None if llm is None else {"preset": args.llm, "backend": llm.backend_name,
                                                      "model": llm.model_id, "stats": llm.stats},
                     "summary": summarize(records)})
        out.update({"benchmark": "vector_rerank_kgqa", "runs": runs, "environment": environment_info(),
                    "metrics": {"hits@1": "strict: the first parsed answer equals a gold answer (normalised)",
                                "containment": "lenient: a gold answer is a substring of the raw answer",
                                "fact_hit": "a returned fact has a gold answer as head or tail (no LLM answer)"}})
        out["outcomes"] = {v: {str(r["id"]): {k: x for k, x in (r.get("variants") or {}).get(v, {}).items()
                                              if k in ("hits@1", "containment", "fact_hit")}
                               for r in records if "id" in r} for v in variants}  # this invocation's, for reproduce
        out.pop("provenance", None)  # this write's own (command, arguments, commit, environment)
        write_result(args.out, to_jsonable(out), args)

    questions = list(ds.items)
    records: list[dict] = []
    for s in range(0, len(questions), step):
        records = method.run(questions[: s + step], recorder=rec, progress=not args.no_progress)
        write(records, "ok" if s + step >= len(questions) else f"running ({len(records)}/{len(questions)})")
    summary = summarize(records)
    rec.finish(summary=summary, timings=summary["latency_mean_s"], tokens=llm.stats if llm is not None else None,
               extra={"index": {**info, **index.info, "build_seconds": round(t_index, 2)}})
    index.close()
    for v, s in summary["variants"].items():
        parts = [f"{k} {100 * s[k]:.1f}" for k in ("hits@1", "containment", "fact_hit") if k in s]
        print(f"{args.dataset} {v:>7}: {'  '.join(parts)}  (n={s['n']}, failed={s['n_failed']})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
