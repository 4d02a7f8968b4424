"""SimGRAG's scale path: vector search for pattern nodes over millions of entity names (FactKG's DBpedia size).

    python benchmarks/simgrag_node_search.py --edges 10000000 --indexes ivf,hnsw,flat \
        --out benchmarks/results/simgrag_node_search_1M.json

A KG from the data layer's generator (`synthetic_kg`, about ten facts per entity), one random unit vector per
entity name (the index cost depends on the count and the dimension, not the text), and queries that are entity
vectors plus noise. Per index kind: build seconds, single-query search ms (one thread, k candidates, one pattern
node per call, as in `GSDRetriever.candidates`), and whether the perturbed entity is found (recall@k of the
exact top-k is low by construction: random vectors have no meaningful neighbours), with nprobe / efSearch
sweeps. `--milvus-entities N` adds Milvus Lite (IVF_FLAT) on the first N vectors. `--typed-queries N` times the
type-candidate rule: Zipf-sized entity types, N patterns (UNKNOWN <type of h> 1, r, UNKNOWN <type of t> 2) read
off random facts with noisy type and relation vectors (results: docs/RESULTS.md).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from kgrag_utils.records import write_result
from kgrag_utils.synthetic import synthetic_kg
from kgrag_utils.vector_index import make_index

sys.path.insert(0, str(Path(__file__).resolve().parent))  # the retrieval benchmark beside it
from simgrag_retrieval import stats  # noqa: E402


def unit_rows(rng: np.random.Generator, n: int, d: int, chunk: int = 200_000) -> np.ndarray:
    """n random unit vectors of size d (float32), drawn in chunks to bound the temporaries."""
    out = np.empty((n, d), dtype=np.float32)
    for s in range(0, n, chunk):
        block = rng.standard_normal((min(chunk, n - s), d), dtype=np.float32)
        block /= np.linalg.norm(block, axis=1, keepdims=True)
        out[s:s + block.shape[0]] = block
    return out


def queries_near(rng: np.random.Generator, vectors: np.ndarray, n: int, noise: float) -> tuple[np.ndarray, np.ndarray]:
    """(queries, source entity ids): entity vectors plus noise of about `noise` in norm, re-normalised."""
    src = rng.choice(vectors.shape[0], size=n, replace=False)
    q = vectors[src] + noise * unit_rows(rng, n, vectors.shape[1])
    q /= np.linalg.norm(q, axis=1, keepdims=True)
    return q.astype(np.float32), src


def single_query_ms(index, queries: np.ndarray, k: int) -> tuple[list[float], np.ndarray]:
    """One query per call (a pattern node at a time), wall-clock ms; and the ids found."""
    times, found = [], np.empty((queries.shape[0], k), dtype=np.int64)
    index.search(queries[:1], k)  # warm-up
    for i in range(queries.shape[0]):
        t0 = time.perf_counter()
        _, ids = index.search(queries[i:i + 1], k)
        times.append((time.perf_counter() - t0) * 1e3)
        found[i, :ids.shape[1]] = ids[0]
        found[i, ids.shape[1]:] = -1
    return times, found


def quality(found: np.ndarray, exact: np.ndarray, src: np.ndarray) -> dict:
    k = exact.shape[1]
    recall = np.mean([len(set(f[f >= 0]) & set(e)) / k for f, e in zip(found, exact)])
    return {f"recall_at_{k}_vs_exact": round(float(recall), 4),
            "source_entity_found": round(float(np.mean([s in set(f) for f, s in zip(found, src)])), 4)}


def run(args) -> dict:
    import faiss

    before = faiss.omp_get_max_threads()
    try:
        return _run(args, faiss)
    finally:
        faiss.omp_set_num_threads(before)


def _run(args, faiss) -> dict:
    faiss.omp_set_num_threads(args.build_threads)
    rng = np.random.default_rng(args.seed)
    t0 = time.perf_counter()
    kg = synthetic_kg(args.edges, num_entities=args.entities, seed=args.seed)
    t1 = time.perf_counter()
    vectors = unit_rows(rng, kg.num_entities, args.dim)
    t2 = time.perf_counter()
    queries, src = queries_near(rng, vectors, args.queries, args.noise)
    out: dict = {
        "benchmark": "simgrag_node_search", "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "params": {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()},
        "kg": {"entities": kg.num_entities, "relations": kg.num_relations, "facts": kg.num_edges,
               "build_s": round(t1 - t0, 2)},
        "vectors": {"n": len(vectors), "dim": args.dim, "MiB": round(vectors.nbytes / 2**20, 1),
                    "generate_s": round(t2 - t1, 2)},
        "k": args.k, "indexes": {},
    }
    if args.typed_queries:
        out["typed_patterns"] = run_typed(args, kg, vectors, rng)
    del kg
    flat = make_index("faiss", dim=args.dim, metric="ip", kind="flat", use_gpu=False)
    flat.add(vectors)
    t0 = time.perf_counter()
    _, exact = flat.search(queries, args.k)  # exact neighbours first (batched, all threads): the reference for recall
    out["exact_batched_ms_per_query"] = round((time.perf_counter() - t0) * 1e3 / args.queries, 4)
    for kind in [k for k in args.indexes.split(",") if k]:
        out["indexes"][kind] = one_index(args, faiss, kind, flat, vectors, queries, exact, src)
    if args.milvus_entities:
        sub = vectors[:args.milvus_entities]
        m_queries, m_src = queries_near(np.random.default_rng(args.seed + 1), sub, min(args.queries, len(sub)), args.noise)
        out["milvus_lite"] = run_milvus(args, sub, m_queries, m_src)
    out["machine"] = {"faiss": faiss.__version__, "load_average_at_end": [round(x, 2) for x in os.getloadavg()],
                      "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)}
    return out


def one_index(args, faiss, kind: str, flat, vectors, queries, exact, src) -> dict:
    """Build one index kind (flat: the exact one already built), time single queries, sweep its search knob."""
    options = {"flat": {}, "hnsw": {"hnsw_m": args.hnsw_m, "ef_construction": args.ef_construction,
                                    "ef_search": args.ef_search}, "ivf": {"nlist": args.nlist, "nprobe": args.nprobe}}[kind]
    faiss.omp_set_num_threads(args.build_threads)
    t0 = time.perf_counter()
    index = flat if kind == "flat" else make_index("faiss", dim=args.dim, metric="ip", kind=kind, use_gpu=False,
                                                   **options)
    if index is not flat:
        index.add(vectors)
    build = time.perf_counter() - t0
    faiss.omp_set_num_threads(args.search_threads)
    times, found = single_query_ms(index, queries, args.k)
    entry = {"build_s": round(build, 2), "options": options, "search_threads": args.search_threads,
             "single_query_ms": stats(times), **quality(found, exact, src)}
    # the recall / speed trade-off of the probe count (IVF) or efSearch (HNSW), on the same index
    knob, values = {"ivf": ("nprobe", (args.nprobe // 2 or 1, args.nprobe, args.nprobe * 2, args.nprobe * 4)),
                    "hnsw": ("ef_search", (max(args.k, args.ef_search // 2), args.ef_search, args.ef_search * 2)),
                    }.get(kind, (None, ()))
    for value in sorted(set(values)):
        index.params[knob] = value
        if kind == "ivf":
            index._index.nprobe = value
        t, f = single_query_ms(index, queries, args.k)
        entry.setdefault(f"{knob}_sweep", {})[str(value)] = {"single_query_ms": stats(t), **quality(f, exact, src)}
    print(kind, json.dumps(entry), flush=True)
    return entry


def run_typed(args, kg, vectors: np.ndarray, rng: np.random.Generator) -> dict:
    """The type-candidate rule on the synthetic KG: patterns of two typed UNKNOWN nodes read off random facts."""
    from kgrag_utils.methods.simgrag.stages.gsd_search import GSDConfig, GSDRetriever
    from kgrag_utils.methods.simgrag.stages.pattern import Pattern, PatternEdge, PatternNode
    from kgrag_utils.methods.simgrag.stages.type_candidates import TypeIndex

    n, d = kg.num_entities, vectors.shape[1]
    sizes = np.arange(1, args.types + 1, dtype=np.float64) ** -1.0
    entity_type = rng.choice(args.types, size=n, p=sizes / sizes.sum())
    order = np.argsort(entity_type, kind="stable")
    indptr = np.zeros(args.types + 1, dtype=np.int64)
    np.cumsum(np.bincount(entity_type, minlength=args.types), out=indptr[1:])
    type_vectors = unit_rows(rng, args.types, d)
    types = TypeIndex(np.array([f"t{i}" for i in range(args.types)], dtype=object), indptr, order, type_vectors)
    rel_vectors = unit_rows(rng, kg.num_relations, d)
    t0 = time.perf_counter()
    retriever = GSDRetriever(kg, vectors, rel_vectors, index_kind="flat", type_index=types)
    setup = time.perf_counter() - t0
    config = GSDConfig(top_k=3, entity_topk=args.k, relation_topk=16, type_topk=args.type_topk, time_limit_s=2.0)
    facts = rng.choice(kg.num_edges, size=args.typed_queries, replace=False)
    rows = []
    for fid in facts.tolist():
        h, r, t = int(kg.heads[fid]), int(kg.rels[fid]), int(kg.tails[fid])
        th, tt = int(entity_type[h]), int(entity_type[t])
        pattern = Pattern([PatternNode("UNKNOWN a 1", False, "a"), PatternNode("UNKNOWN b 2", False, "b")],
                          [PatternEdge(0, f"r{r}", 1)])

        def noisy(v):
            x = v + args.noise * unit_rows(rng, 1, d)[0]
            return (x / np.linalg.norm(x)).astype(np.float32)[None, :]

        q_types = np.concatenate([noisy(type_vectors[th]), noisy(type_vectors[tt])])
        t0 = time.perf_counter()
        cand = retriever.candidates(pattern, config, node_vectors=np.zeros((0, d), np.float32),
                                    relation_vectors=noisy(rel_vectors[r]), type_vectors=q_types)
        t1 = time.perf_counter()
        result = retriever.search(pattern, config, cand)
        t2 = time.perf_counter()
        rows.append({"type_ms": (t1 - t0) * 1e3, "enumerate_ms": (t2 - t1) * 1e3,
                     "candidates": [int(cand.node_ids[0].size), int(cand.node_ids[1].size)],
                     "true_types_in": th in {int(x) for x in types.nearest_types(q_types[:1], args.type_topk)[0]},
                     "best_uses_query_relation": result.best is not None
                     and int(kg.rels[result.best.edges[0]]) == r,
                     "timed_out": result.timed_out, "expanded": result.nodes_expanded})
    smaller = [min(r_["candidates"]) for r_ in rows]
    return {"types": args.types, "type_topk": args.type_topk, "queries": len(rows), "setup_s": round(setup, 2),
            "type_candidates_ms": stats([r_["type_ms"] for r_ in rows]),
            "enumeration_ms": stats([r_["enumerate_ms"] for r_ in rows]),
            "root_candidates": stats(smaller, 0), "nodes_expanded": stats([r_["expanded"] for r_ in rows], 0),
            "best_uses_query_relation": round(float(np.mean([r_["best_uses_query_relation"] for r_ in rows])), 4),
            "true_type_among_nearest": round(float(np.mean([r_["true_types_in"] for r_ in rows])), 4),
            "timed_out": int(sum(r_["timed_out"] for r_ in rows))}


def run_milvus(args, vectors: np.ndarray, queries: np.ndarray, src: np.ndarray) -> dict:
    """Milvus Lite over the first N vectors, with queries near those N."""
    try:
        import milvus_lite  # noqa: F401
        import pymilvus  # noqa: F401
    except ImportError as exc:
        return {"skipped": f"pymilvus / milvus-lite not installed ({exc.name})"}
    n = vectors.shape[0]
    flat = make_index("faiss", dim=args.dim, metric="ip", kind="flat", use_gpu=False)
    flat.add(vectors)
    _, exact = flat.search(queries, args.k)
    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        index = make_index("milvus", dim=args.dim, metric="ip", kind="ivf", uri=str(Path(tmp) / "nodes.db"),
                           collection="entities", nlist=args.nlist, nprobe=args.nprobe, overwrite=True)
        index.add(vectors)
        index.search(queries[:1], args.k)  # the first search flushes and builds
        build = time.perf_counter() - t0
        times, found = single_query_ms(index, queries, args.k)
        entry = {"entities": n, "kind": "IVF_FLAT", "build_s_including_first_search": round(build, 2),
                 "options": {"nlist": args.nlist, "nprobe": args.nprobe}, "single_query_ms": stats(times),
                 **quality(found, exact, src)}
        del index
    print("milvus_lite", json.dumps(entry), flush=True)
    return entry


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--edges", type=int, default=10_000_000, help="facts of the synthetic KG (DBpedia in FactKG: ~10M)")
    ap.add_argument("--entities", type=int, default=None, help="entities (default: edges / 10)")
    ap.add_argument("--dim", type=int, default=384, help="embedding size (MiniLM 384; the paper's nomic 768)")
    ap.add_argument("--queries", type=int, default=300)
    ap.add_argument("--noise", type=float, default=0.3)
    ap.add_argument("--k", type=int, default=16, help="candidates per pattern node (SimGRAG's n)")
    ap.add_argument("--indexes", default="ivf,hnsw,flat")
    ap.add_argument("--nlist", type=int, default=2048)
    ap.add_argument("--nprobe", type=int, default=16)
    ap.add_argument("--hnsw-m", type=int, default=16)
    ap.add_argument("--ef-construction", type=int, default=40)
    ap.add_argument("--ef-search", type=int, default=64)
    ap.add_argument("--build-threads", type=int, default=2)
    ap.add_argument("--search-threads", type=int, default=1)
    ap.add_argument("--milvus-entities", type=int, default=0, help="also Milvus Lite on the first N vectors (0: skip)")
    ap.add_argument("--typed-queries", type=int, default=0, help="also time the type-candidate rule on N patterns")
    ap.add_argument("--types", type=int, default=500, help="entity types for --typed-queries ")
    ap.add_argument("--type-topk", type=int, default=16)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args(argv)
    out = run(args)
    print("wrote", write_result(args.out, out, args) if args.out else json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
