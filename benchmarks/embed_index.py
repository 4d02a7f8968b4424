"""Speed of the embedding cache and the vector indexes at the MetaQA entity-vocabulary size.

    python benchmarks/embed_index.py --out benchmarks/results/embed_index.json [--limit N]

With the packaged MiniLM on this machine's CPU: model load, cold encoding (texts/s), cache hits in the same and in
a fresh process, a partly cached call; the vector cache's append-only shards (kgrag_utils.embeddings) against an
SQLite (WAL, float32 blobs) store on the same vectors; FAISS flat / HNSW / IVF build time, single-query and batched
latency, and recall@10 against exact search. Names are MetaQA's entities (the data folder), queries its 1-hop test
questions; without the data, generated names. Only counts and timings are written.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sqlite3
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from bench_common import ROOT, default_kb, entity_names, json_child, load, percentiles, timed, write

K = 10
FRESH_PROCESS = """
import json, sys, time
t0 = time.perf_counter()
from kgrag_utils.embeddings import load_embedder
t1 = time.perf_counter()
names = json.load(open(sys.argv[1], encoding="utf-8"))
emb = load_embedder("minilm", device="cpu")
t2 = time.perf_counter()
v = emb.encode(names, progress=False)
t3 = time.perf_counter()
print(json.dumps({"import_s": t1 - t0, "encode_s": t3 - t2, "model_loaded": emb.model_loaded,
                  "shape": list(v.shape), **{"stats_" + k: v for k, v in emb.last_stats.items()}}))
"""


def queries_for(names: list[str], n: int, seed: int) -> list[str]:
    """MetaQA's 1-hop test questions (brackets removed), sampled; without them, questions about the names."""
    qa = default_kb().parent / "qa" / "1-hop" / "vanilla" / "qa_test.txt"
    rng = random.Random(seed)
    if qa.exists():
        with qa.open(encoding="utf-8") as fh:
            questions = [ln.split("\t", 1)[0].replace("[", "").replace("]", "") for ln in fh if "\t" in ln]
        return rng.sample(questions, min(n, len(questions)))
    return [f"what films did {rng.choice(names)} star in" for _ in range(n)]


def bench_embedding(names: list[str], queries: list[str], workdir: Path) -> tuple[dict, np.ndarray, np.ndarray]:
    os.environ["KGRAG_CACHE_DIR"] = str(workdir / "cache")  # a cold cache, outside the checkout
    from kgrag_utils.embeddings import load_embedder

    emb = load_embedder("minilm", device="cpu")
    _, load_s = timed(lambda: emb.model)
    vecs, cold_s = timed(emb.encode, names, progress=True)
    cold_stats = dict(emb.last_stats)
    same = load_embedder("minilm", device="cpu")  # new object: reads the shards from disk
    again, hit_s = timed(same.encode, names, progress=False)
    assert np.array_equal(again, vecs)
    hit_stats = dict(same.last_stats)
    _, hit_warm_s = timed(same.encode, names, progress=False)  # shards already mapped
    (names_file := workdir / "names.json").write_text(json.dumps(names), encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1"}
    fresh, fresh_total_s = timed(json_child, [sys.executable, "-c", FRESH_PROCESS, str(names_file)], env=env)
    qvecs, q_s = timed(emb.encode, queries, progress=False)
    q_stats = dict(emb.last_stats)
    mixed = names[: len(names) // 10] + [q + " ?" for q in queries]  # mostly cached, some new
    _, mixed_s = timed(emb.encode, mixed, progress=False)
    return {"model_id": emb.model_id, "dim": emb.dim, "batch_size": emb.batch_size, "n_texts": len(names),
            "mean_chars": float(np.mean([len(s) for s in names])), "model_load_s": load_s, "cold_encode_s": cold_s,
            "cold_texts_per_s": len(names) / cold_s, "cold_stats": cold_stats,
            "cache_shards_after_cold": len(list((emb.cache.folder / "shards").iterdir())),
            "cache_hit_new_object_s": hit_s, "cache_hit_same_object_s": hit_warm_s,
            "cache_hit_rate": hit_stats["cache_hits"] / hit_stats["unique"],
            "cache_hit_fresh_process": {**fresh, "wall_s_including_python_start": fresh_total_s},
            "queries_cold_encode_s": q_s, "queries_stats": q_stats,
            "mixed_call": {"s": mixed_s, **emb.last_stats}}, vecs, qvecs


class SqliteStore:
    """The alternative cache design: one SQLite file (WAL), (key INTEGER primary key, float32 blob)."""

    def __init__(self, path: Path, dim: int):
        self.dim, self.con = dim, sqlite3.connect(path, timeout=60)
        self.con.execute("PRAGMA journal_mode=WAL")
        self.con.execute("PRAGMA synchronous=NORMAL")
        self.con.execute("CREATE TABLE IF NOT EXISTS vec (k INTEGER PRIMARY KEY, v BLOB NOT NULL)")

    def put(self, keys: np.ndarray, vecs: np.ndarray, chunk: int = 1024) -> None:
        for s in range(0, len(keys), chunk):
            with self.con:
                rows = zip(keys[s: s + chunk].tolist(), (r.tobytes() for r in vecs[s: s + chunk]))
                self.con.executemany("INSERT OR IGNORE INTO vec VALUES (?, ?)", rows)

    def get(self, keys: np.ndarray) -> np.ndarray:
        found: dict[int, bytes] = {}
        klist = keys.tolist()
        for s in range(0, len(klist), 30000):
            part = klist[s: s + 30000]
            found.update(self.con.execute(f"SELECT k, v FROM vec WHERE k IN ({','.join('?' * len(part))})", part))
        return np.frombuffer(b"".join(found[k] for k in klist if k in found), dtype=np.float32).reshape(-1, self.dim)


def bench_cache_stores(names: list[str], vecs: np.ndarray, workdir: Path) -> dict:
    from kgrag_utils.embeddings import VectorCache, text_keys

    keys, out = text_keys(names), {"n": len(names), "chosen": "shards"}
    shard = VectorCache(workdir / "cmp-shards", "bench-model")

    def shard_put():
        for s in range(0, len(keys), 1024):  # the same 1,024-text chunks the embedder writes
            shard.put(keys[s: s + 1024], vecs[s: s + 1024])

    _, put_s = timed(shard_put)
    reader = VectorCache(workdir / "cmp-shards", "bench-model")  # cold reader, like a new process
    (found, got), get_cold_s = timed(reader.get, keys)
    assert found.all() and np.array_equal(got, vecs)
    out["shards"] = {"put_s": put_s, "get_cold_s": get_cold_s, "get_warm_s": timed(reader.get, keys)[1]}
    db = SqliteStore(workdir / "cmp.sqlite", vecs.shape[1])
    _, put_s = timed(db.put, keys, vecs)
    db.con.close()
    db = SqliteStore(workdir / "cmp.sqlite", vecs.shape[1])
    got, get_cold_s = timed(db.get, keys)
    assert np.array_equal(got, vecs)
    out["sqlite_wal"] = {"put_s": put_s, "get_cold_s": get_cold_s, "get_warm_s": timed(db.get, keys)[1]}
    return out


def bench_index(index, vecs, names, queries, exact_ids=None, n_single: int = 300) -> tuple[dict, np.ndarray]:
    _, build_s = timed(index.add, vecs, names)
    index.search(queries[:4], K)  # warm-up
    single = [timed(index.search, q[None, :], K)[1] * 1e3 for q in queries[:n_single]]
    batches = {}
    for bs in (64, 1024):
        times = [timed(index.search, queries[s: s + bs], K)[1] * 1e3 for s in range(0, len(queries) - bs + 1, bs)]
        if times:
            stats = percentiles(times, "ms", digits=4)
            batches[str(bs)] = {**stats, "per_query_us": stats["median_ms"] * 1e3 / bs}
    _, ids = index.search(queries, K)
    result = {"build_s": build_s, "single_query": percentiles(single, "ms", digits=4), "batches": batches}
    if exact_ids is not None:
        result["recall_at_10_vs_exact"] = float(np.mean([len(set(a) & set(b)) / K for a, b in zip(ids, exact_ids)]))
    return result, ids


def bench_indexes(vecs: np.ndarray, names: list[str], qvecs: np.ndarray, workdir: Path) -> dict:
    import faiss

    from kgrag_utils.vector_index import VectorIndex, make_index

    out: dict = {"n_vectors": int(vecs.shape[0]), "dim": int(vecs.shape[1]), "n_queries": int(qvecs.shape[0]), "k": K,
                 "metric": "ip", "faiss_threads": faiss.omp_get_max_threads()}
    flat = make_index("faiss", dim=vecs.shape[1], metric="ip", kind="flat", use_gpu=False)
    out["faiss_flat"], exact = bench_index(flat, vecs, names, qvecs)
    for kind in ("hnsw", "ivf"):
        index = make_index("faiss", dim=vecs.shape[1], metric="ip", kind=kind, use_gpu=False)
        out[f"faiss_{kind}"], _ = bench_index(index, vecs, names, qvecs, exact)
        out[f"faiss_{kind}"]["params"] = index.params
    folder, out["faiss_flat"]["save_s"] = timed(flat.save, workdir / "flat-index")
    out["faiss_flat"]["load_s"] = timed(VectorIndex.load, folder)[1]
    return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", required=True, help="JSON file to write (e.g. benchmarks/results/embed_index.json)")
    parser.add_argument("--limit", type=int, default=None, help="use only the first N names (quick runs)")
    parser.add_argument("--queries", type=int, default=2048, help="number of query texts")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    names = entity_names(default_kb(), args.limit or 10**9)
    queries = queries_for(names, args.queries, args.seed)
    source = "MetaQA" if default_kb().is_file() else "synthetic"
    print(f"{len(names)} names, {len(queries)} queries from {source}", flush=True)
    load_start, started = load(), time.time()
    with tempfile.TemporaryDirectory(prefix="kgrag-bench-") as tmp:
        emb_result, vecs, qvecs = bench_embedding(names, queries, Path(tmp))
        record = {"benchmark": "embed_index", "source": source, "n_names": len(names), "n_queries": len(queries),
                  "started_at": time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(started)), "embedding": emb_result,
                  "cache_store_comparison": bench_cache_stores(names, vecs, Path(tmp)),
                  "index": bench_indexes(vecs, names, qvecs, Path(tmp))}
    record.update(wall_s=time.time() - started, load_average_1_5_15min={"start": load_start, "end": load()})
    print(json.dumps({k: v for k, v in emb_result.items() if not isinstance(v, dict)}, indent=1))
    write(args.out, record, args)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
