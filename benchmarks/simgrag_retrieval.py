"""SimGRAG retrieval latency on real KGQA data, from oracle patterns (the gold relation chains: no LLM).

    python benchmarks/simgrag_retrieval.py --dataset metaqa-3hop --limit 1000 \
        --out benchmarks/results/simgrag_metaqa-3hop.json

Takes any registered KG-question dataset and its options (`--dataset wc2014-conj`, `--dataset pq-file
--option path=PQL-2H.txt --option kb=PQL2-KB.txt`); conjunctive questions get tree patterns. Per query, wall and
CPU ms (median / p95) of the vector search (FAISS over all entity names + exact re-scoring of the top-n; also per
pattern node, and amortised over one batched call for all queries), the relation distances, the embedding
lookup and the enumeration, and the search nodes expanded. The quality of the same retrieval is a method run:
`kgrag repro simgrag-oracle`. At DBpedia size: benchmarks/simgrag_node_search.py.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import time
from pathlib import Path

import numpy as np

from kgrag_utils.datasets.arguments import add_dataset_arguments, check_dataset_arguments, dataset_from_args
from kgrag_utils.methods.simgrag.stages.gsd_search import GSDConfig, GSDRetriever, embedding_text
from kgrag_utils.methods.simgrag.stages.oracle import oracle_pattern
from kgrag_utils.records import write_result

#: the per-query timings of `GSDRetriever.retrieve` a row keeps
TIMINGS = ("encode_ms", "node_search_ms", "node_search_cpu_ms", "relation_ms", "relation_cpu_ms", "enumerate_ms",
           "enumerate_cpu_ms")


def stats(values, digits: int = 4) -> dict:
    """n, median, p95, mean and max of the values that are not None (also benchmarks/simgrag_node_search.py's)."""
    arr = np.asarray([v for v in values if v is not None], dtype=np.float64)
    if arr.size == 0:
        return {"n": 0}
    return {"n": int(arr.size), "median": round(float(np.median(arr)), digits),
            "p95": round(float(np.percentile(arr, 95)), digits), "mean": round(float(arr.mean()), digits),
            "max": round(float(arr.max()), digits)}


def latency(rows: list[dict]) -> dict:
    """Median / p95 / mean / max ms per query of each retrieval stage and of their sum, wall and CPU."""
    out = {}
    for name, key in (("vector_search", "node_search"), ("relation_distances", "relation"),
                      ("enumeration", "enumerate")):
        out[name] = stats([r[f"{key}_ms"] for r in rows])
        out[f"{name}_cpu"] = stats([r[f"{key}_cpu_ms"] for r in rows])
    for cpu in ("", "_cpu"):
        out[f"retrieval_total{cpu}"] = stats([r[f"node_search{cpu}_ms"] + r[f"relation{cpu}_ms"] + r[f"enumerate{cpu}_ms"]
                                              for r in rows])
    return out


def run(args) -> dict:
    """Per-query retrieval time from the gold pattern of each question."""
    from kgrag_utils.embeddings import load_embedder

    t0 = time.perf_counter()
    data = dataset_from_args(args, limit=args.limit, seed=args.seed)
    t1 = time.perf_counter()
    embedder = load_embedder(args.embedder)
    retriever = GSDRetriever.from_embedder(data.kg, embedder, index_kind=args.index)
    t2 = time.perf_counter()
    config = GSDConfig(top_k=args.top_k, entity_topk=args.entity_topk, relation_topk=args.relation_topk,
                       injective=args.injective, direction=args.direction, time_limit_s=args.time_limit)
    patterns = list(map(oracle_pattern, data.items))
    node_texts = [embedding_text(p.nodes[v].label) for p in patterns if p for v in p.known_nodes]
    # pattern texts go through the embedder's cache first, so per-query encode times are lookups
    embedder.encode(sorted(set(node_texts) | {embedding_text(e.relation) for p in patterns if p for e in p.edges}))
    rows = []
    for p in filter(None, patterns):
        result, _ = retriever.retrieve(p, config)
        rows.append({"timed_out": result.timed_out, "nodes_expanded": result.nodes_expanded,
                     "known_nodes": len(p.known_nodes), **{k: result.timings[k] for k in TIMINGS}})
    t3 = time.perf_counter()
    vecs = embedder.encode(node_texts)  # one batched vector search for all known pattern nodes (amortised per node)
    tb = time.perf_counter()
    retriever.index.search(vecs, args.entity_topk)
    batched_ms = (time.perf_counter() - tb) * 1e3
    return {
        "benchmark": "simgrag_retrieval", "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "params": {k: v for k, v in vars(args).items() if not k.startswith("_")},
        "machine": {"load_average_at_end": [round(x, 2) for x in os.getloadavg()],
                    "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)},
        "dataset": data.name, "split": data.split, "n_questions": len(data.items),
        "kg": {"entities": data.kg.num_entities, "relations": data.kg.num_relations, "facts": data.kg.num_edges},
        "seconds": {"load_dataset": round(t1 - t0, 2), "embed_and_index": round(t2 - t1, 2),
                    "queries": round(t3 - t2, 2), **{k: round(v, 3) for k, v in retriever.build_seconds.items()}},
        "batched_node_search_ms_per_node": round(batched_ms / max(len(node_texts), 1), 4),
        "batched_node_search_nodes": len(node_texts),
        "embedder": args.embedder, "index": retriever.index_kind, "index_from_cache": retriever.index_from_cache,
        "no_pattern": sum(p is None for p in patterns), "timed_out": sum(r["timed_out"] for r in rows),
        "ms_per_query": {**latency(rows), "vector_search_per_node": stats([r["node_search_ms"] / r["known_nodes"]
                                                                          for r in rows if r["known_nodes"]]),
                         "encode_lookup": stats([r["encode_ms"] for r in rows])},
        "timing_note": "wall-clock ms on a shared 2-core machine (load average in `machine`); the *_cpu rows are "
                       "process/thread CPU ms, which scheduling delays from other jobs do not inflate",
        "nodes_expanded": stats([r["nodes_expanded"] for r in rows], 1),
    }


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_dataset_arguments(ap, kinds=("kgqa",))  # --dataset NAME, --split, --option key=value
    ap.add_argument("--limit", type=int, default=None)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--top-k", type=int, default=3)
    ap.add_argument("--entity-topk", type=int, default=16)
    ap.add_argument("--relation-topk", type=int, default=16)
    ap.add_argument("--direction", default="any", choices=("any", "same"))
    ap.add_argument("--injective", action=argparse.BooleanOptionalAction, default=GSDConfig().injective,
                    help="injective mappings only (no walks); the default allows walks (--no-injective)")
    ap.add_argument("--time-limit", type=float, default=2.0)
    ap.add_argument("--embedder", default="minilm")
    ap.add_argument("--index", default="auto", choices=("auto", "flat", "hnsw", "ivf"),
                    help="entity index; auto = flat below gsd_search.AUTO_HNSW_MIN_ENTITIES entities, else HNSW")
    ap.add_argument("--faiss-threads", type=int, default=1,
                    help="OpenMP threads for FAISS (1: single queries do not wait on busy cores)")
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args(argv)
    check_dataset_arguments(args)  # unknown names, kinds and options fail here, in one line
    import faiss

    faiss.omp_set_num_threads(args.faiss_threads)
    result = run(args)
    if args.out is not None:
        print(f"wrote {write_result(args.out, result)}")
    print(json.dumps({k: result[k] for k in ("ms_per_query", "nodes_expanded")}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
