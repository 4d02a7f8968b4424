"""SimGRAG retrieval latency: oracle patterns on real KGQA data, or random patterns on a synthetic KG.

Real data (patterns from the gold relation chains, so the LLM is out of the loop):

    python benchmarks/simgrag_retrieval.py --dataset metaqa-3hop --limit 1000 \
        --out benchmarks/results/simgrag_metaqa-3hop.json

takes any registered KG-question dataset and its options (`--dataset wc2014-conj`, `--dataset pq-file
--option path=PQL-2H.txt --option kb=PQL2-KB.txt`, `--option variant=ntm`); conjunctive questions get
tree patterns. It reports per query: vector search ms (FAISS over all entity names + exact re-scoring of
the top-n; also per pattern node and amortised over one batched call for all queries), relation-distance
ms, embedding-lookup ms, enumeration ms (median / p95) and search nodes expanded. The quality of the same
retrieval (Hits@1 of the top-1 subgraph's answer node) is a method run: `kgrag repro simgrag-oracle`.

Synthetic scale test (random unit embeddings, no model):

    python benchmarks/simgrag_retrieval.py --dataset synthetic --edges 10000000 --queries 200 \
        --out benchmarks/results/simgrag_synthetic_10M.json

builds a power-law KG with the data layer's generator, gives every entity and relation a random
unit vector, and queries path patterns read off random walks (1-3 hops; the start entity known, its
vector and the relation vectors perturbed by noise). It reports per-query retrieval time
(vector search + relation distances + enumeration) for an exact (flat) and an IVF entity index.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import sys
import time
from pathlib import Path

import numpy as np

from kgrag_utils.datasets.arguments import add_dataset_arguments, check_dataset_arguments, dataset_from_args
from kgrag_utils.records import write_result
from kgrag_utils.methods.simgrag.stages.gsd_search import GSDConfig, GSDRetriever, embedding_text
from kgrag_utils.methods.simgrag.stages.oracle import oracle_pattern
from kgrag_utils.methods.simgrag.stages.pattern import Pattern, PatternEdge, PatternNode

sys.path.insert(0, str(Path(__file__).resolve().parent))  # the node-search benchmark beside it
from simgrag_node_search import stats, unit_rows  # noqa: E402


#: the per-query timings of `GSDRetriever.retrieve` a row keeps
TIMINGS = ("encode_ms", "node_search_ms", "node_search_cpu_ms", "relation_ms", "relation_cpu_ms", "enumerate_ms",
           "enumerate_cpu_ms")


def machine() -> dict:
    load = os.getloadavg() if hasattr(os, "getloadavg") else None
    return {"platform": platform.platform(), "python": platform.python_version(), "numpy": np.__version__,
            "cpus": os.cpu_count(), "load_average_at_end": [round(x, 2) for x in load] if load else None,
            "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)}


def config_from(args) -> GSDConfig:
    return GSDConfig(top_k=args.top_k, entity_topk=args.entity_topk, relation_topk=args.relation_topk,
                     injective=args.injective, direction=args.direction, time_limit_s=args.time_limit)


# ----------------------------------------------------------------------------- real data


def run_real(args) -> dict:
    """Per-query retrieval time from the gold pattern of each question (oracle patterns keep the LLM out)."""
    from kgrag_utils.embeddings import load_embedder

    t0 = time.perf_counter()
    data = dataset_from_args(args, limit=args.limit, seed=args.seed)
    t1 = time.perf_counter()
    embedder = load_embedder(args.embedder)
    retriever = GSDRetriever.from_embedder(data.kg, embedder, index_kind=args.index)
    t2 = time.perf_counter()
    config = config_from(args)
    patterns = [oracle_pattern(q) for q in data.items]
    # pattern texts go through the embedder's cache first, so per-query encode times are lookups
    texts = sorted({embedding_text(p.nodes[v].label) for p in patterns if p for v in p.known_nodes} |
                   {embedding_text(e.relation) for p in patterns if p for e in p.edges})
    embedder.encode(texts)
    rows = []
    for p in patterns:
        if p is None:
            continue
        result, _ = retriever.retrieve(p, config)
        rows.append({"timed_out": result.timed_out, "nodes_expanded": result.nodes_expanded,
                     "known_nodes": len(p.known_nodes), **{k: result.timings[k] for k in TIMINGS}})
    t3 = time.perf_counter()
    # one batched vector search for all known pattern nodes (the amortised cost per node)
    node_texts = [embedding_text(p.nodes[v].label) for p in patterns if p for v in p.known_nodes]
    vecs = embedder.encode(node_texts)
    tb = time.perf_counter()
    retriever.index.search(vecs, args.entity_topk)
    batched_ms = (time.perf_counter() - tb) * 1e3
    return {
        "benchmark": "simgrag_retrieval",
        "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "params": {k: v for k, v in vars(args).items() if not k.startswith("_")},
        "machine": machine(),
        "dataset": data.name, "split": data.split, "n_questions": len(data.items),
        "kg": {"entities": data.kg.num_entities, "relations": data.kg.num_relations, "facts": data.kg.num_edges},
        "seconds": {"load_dataset": round(t1 - t0, 2), "embed_and_index": round(t2 - t1, 2),
                    "queries": round(t3 - t2, 2), **{k: round(v, 3) for k, v in retriever.build_seconds.items()}},
        "batched_node_search_ms_per_node": round(batched_ms / max(len(node_texts), 1), 4),
        "batched_node_search_nodes": len(node_texts),
        "embedder": args.embedder, "index": retriever.index_kind, "index_from_cache": retriever.index_from_cache,
        "no_pattern": sum(p is None for p in patterns),
        "timed_out": sum(r["timed_out"] for r in rows),
        "ms_per_query": {**latency(rows), "vector_search_per_node": stats([r["node_search_ms"] / r["known_nodes"]
                                                                          for r in rows if r["known_nodes"]]),
                         "encode_lookup": stats([r["encode_ms"] for r in rows])},
        "timing_note": "wall-clock ms on a shared 2-core machine (load average in `machine`); the *_cpu rows are "
                       "process/thread CPU ms, which scheduling delays from other jobs do not inflate",
        "nodes_expanded": stats([r["nodes_expanded"] for r in rows], 1),
    }


def latency(rows: list[dict]) -> dict:
    """Median / p95 / mean / max ms per query of each retrieval stage and of their sum, wall and CPU."""
    out = {}
    for name, key in (("vector_search", "node_search"), ("relation_distances", "relation"),
                      ("enumeration", "enumerate")):
        out[name] = stats([r[f"{key}_ms"] for r in rows])
        out[f"{name}_cpu"] = stats([r[f"{key}_cpu_ms"] for r in rows])
    out["retrieval_total"] = stats([r["node_search_ms"] + r["relation_ms"] + r["enumerate_ms"] for r in rows])
    out["retrieval_total_cpu"] = stats([r["node_search_cpu_ms"] + r["relation_cpu_ms"] + r["enumerate_cpu_ms"]
                                        for r in rows])
    return out


# ----------------------------------------------------------------------------- synthetic


def random_walk_pattern(kg, incidence, rng, hops):
    """(pattern, walk entity ids) from a random walk with distinct entities, or None if it got stuck."""
    start = int(rng.integers(kg.num_entities))
    if incidence.indptr[start + 1] == incidence.indptr[start]:
        return None
    walk, edges = [start], []
    for _ in range(hops):
        x = walk[-1]
        s, e = int(incidence.indptr[x]), int(incidence.indptr[x + 1])
        options = [i for i in rng.integers(s, e, size=min(8, e - s)).tolist() if int(incidence.nbr[i]) not in walk] if e > s else []
        if not options:
            return None
        i = options[0]
        walk.append(int(incidence.nbr[i]))
        edges.append((int(incidence.eid[i]), bool(incidence.out[i])))
    nodes = [PatternNode(f"e{start}", True)] + [PatternNode(f"UNKNOWN entity {i}", False, "entity") for i in range(1, hops + 1)]
    pedges = []
    for i, (eid, out) in enumerate(edges):
        rel = str(kg.relation_names[kg.rels[eid]])
        pedges.append(PatternEdge(i, rel, i + 1) if out else PatternEdge(i + 1, rel, i))
    return Pattern(nodes, pedges, answer=hops, source="random-walk"), walk, [e for e, _ in edges]


def run_synthetic(args) -> dict:
    from kgrag_utils.synthetic import synthetic_kg

    rng = np.random.default_rng(args.seed)
    t0 = time.perf_counter()
    kg = synthetic_kg(args.edges, seed=args.seed)
    t1 = time.perf_counter()
    ent = unit_rows(rng, kg.num_entities, args.dim)
    rel = unit_rows(rng, kg.num_relations, args.dim)
    t2 = time.perf_counter()
    out = {"dataset": f"synthetic-{args.edges}", "kg": {"entities": kg.num_entities, "relations": kg.num_relations,
                                                      "facts": kg.num_edges},
           "dim": args.dim, "noise": args.noise, "seconds": {"kg": round(t1 - t0, 2), "embeddings": round(t2 - t1, 2)},
           "indexes": {}}
    config = config_from(args)
    queries = None
    for kind in args.synthetic_indexes.split(","):
        tb = time.perf_counter()
        options = {"nlist": args.nlist, "nprobe": args.nprobe} if kind == "ivf" else {}
        retriever = GSDRetriever(kg, ent, rel, index_kind=kind, index_options=options)
        build = time.perf_counter() - tb
        if queries is None:  # the same random patterns for every index
            queries = []
            while len(queries) < args.queries:
                hops = 1 + len(queries) % 3
                made = random_walk_pattern(kg, retriever.incidence, rng, hops)
                if made is None:
                    continue
                pattern, walk, _ = made
                node_vec = ent[walk[0]] + args.noise * rng.standard_normal(args.dim).astype(np.float32) / np.sqrt(args.dim)
                node_vec /= np.linalg.norm(node_vec)
                rel_vecs = np.stack([rel[kg.relation_id(e.relation)] for e in pattern.edges])
                rel_vecs = rel_vecs + args.noise * rng.standard_normal(rel_vecs.shape).astype(np.float32) / np.sqrt(args.dim)
                rel_vecs /= np.linalg.norm(rel_vecs, axis=1, keepdims=True)
                queries.append((pattern, walk, node_vec[None, :].astype(np.float32), rel_vecs.astype(np.float32)))
        rows = []
        for pattern, walk, node_vec, rel_vecs in queries:
            cand = retriever.candidates(pattern, config, node_vec, rel_vecs)
            result = retriever.search(pattern, config, cand)
            # the walk itself is a match: its GSD bounds the top-1 GSD from above
            walk_gsd = float(np.linalg.norm(node_vec[0].astype(np.float64) - ent[walk[0]]) +
                             sum(np.linalg.norm(rel_vecs[j].astype(np.float64) - rel[kg.relation_id(e.relation)])
                                 for j, e in enumerate(pattern.edges)))
            best = result.best
            rows.append({
                "hops": len(pattern.edges),
                "start_in_candidates": bool(walk[0] in set(cand.node_ids[0].tolist())),
                "top1_le_walk_gsd": bool(best is not None and best.gsd <= walk_gsd + 1e-6),
                "timed_out": result.timed_out, "nodes_expanded": result.nodes_expanded,
                **{k: result.timings[k] for k in TIMINGS[1:]},
            })
        total = [r["node_search_ms"] + r["relation_ms"] + r["enumerate_ms"] for r in rows]
        out["indexes"][kind] = {
            "build_s": round(build, 2), "incidence_build_s": round(retriever.build_seconds["incidence"], 2),
            "index_params": getattr(retriever.index, "params", {}),
            "start_entity_in_candidates": round(float(np.mean([r["start_in_candidates"] for r in rows])), 4),
            "top1_gsd_le_walk_gsd": round(float(np.mean([r["top1_le_walk_gsd"] for r in rows])), 4),
            "timed_out": sum(r["timed_out"] for r in rows),
            "ms_per_query": {**latency(rows), "retrieval_total_by_hops": {
                h: stats([t for t, r in zip(total, rows) if r["hops"] == h]) for h in (1, 2, 3)}},
            "nodes_expanded": stats([r["nodes_expanded"] for r in rows], 1),
        }
        print(json.dumps({kind: out["indexes"][kind]["ms_per_query"]["retrieval_total"]}), flush=True)
        del retriever
    return {"benchmark": "simgrag_retrieval_synthetic", "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
            "params": {k: v for k, v in vars(args).items() if not k.startswith("_")}, "machine": machine(), **out}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_dataset_arguments(ap, kinds=("kgqa",))  # --dataset NAME (or 'synthetic'), --split, --option key=value
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
    ap.add_argument("--edges", type=int, default=10_000_000, help="synthetic: number of facts")
    ap.add_argument("--dim", type=int, default=384, help="synthetic: embedding size")
    ap.add_argument("--noise", type=float, default=0.3, help="synthetic: noise on query vectors (norm, about)")
    ap.add_argument("--queries", type=int, default=200, help="synthetic: number of random patterns")
    ap.add_argument("--synthetic-indexes", default="ivf,flat", help="synthetic: comma list of index kinds")
    ap.add_argument("--nlist", type=int, default=1024)
    ap.add_argument("--nprobe", type=int, default=16)
    ap.add_argument("--faiss-threads", type=int, default=1,
                    help="OpenMP threads for FAISS (1: single queries do not wait on busy cores)")
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args(argv)
    if args.dataset != "synthetic":
        check_dataset_arguments(args)  # unknown names, kinds and options fail here, in one line
    import faiss

    faiss.omp_set_num_threads(args.faiss_threads)
    result = run_synthetic(args) if args.dataset == "synthetic" else run_real(args)
    if args.out is not None:
        print(f"wrote {write_result(args.out, result)}")
    print(json.dumps({k: result[k] for k in ("ms_per_query", "nodes_expanded") if k in result}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
