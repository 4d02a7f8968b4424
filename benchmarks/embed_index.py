"""Speed of the embedding cache and the vector indexes at the MetaQA entity-vocabulary size.

    python benchmarks/embed_index.py --out benchmarks/results/embed_index.json [--data DIR]

Measures, with the packaged MiniLM on this machine's CPU:
- embedding: model load, cold encode (texts/s), cache hits in the same process and in a fresh
  process (time, hit rate), a partly cached call;
- the cache design: the append-only shard store used by kgrag_utils.embeddings against an SQLite
  (WAL, float32 blobs) store, writing and reading the same vectors;
- indexes: build time, single-query and batched latency (median / p95), and recall@10 of the
  approximate indexes against exact search, for FAISS flat / HNSW / IVF and, when installed,
  Milvus Lite flat / HNSW.

Names come from ``<data>/MetaQA/kb_reconstructed.txt`` (``head|relation|tail`` lines, parsed here)
when present, with the 1-hop test questions as queries; otherwise synthetic names and queries of
the same size. Only counts and timings are written: no data.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

K = 10


def load_names(data: Path | None, n_synthetic: int, n_queries: int, seed: int) -> tuple[list[str], list[str], str]:
    """Entity names (unique heads and tails) and query texts; synthetic when MetaQA is absent."""
    kb = data / "MetaQA" / "kb_reconstructed.txt" if data else None
    if kb is not None and kb.exists():
        names: dict[str, None] = {}
        with kb.open(encoding="utf-8") as fh:
            for line in fh:
                parts = line.rstrip("\n").split("|")
                if len(parts) != 3:
                    continue
                names.setdefault(parts[0].strip(), None)
                names.setdefault(parts[2].strip(), None)
        names.pop("", None)
        qa = data / "MetaQA" / "qa" / "1-hop" / "vanilla" / "qa_test.txt"
        questions = []
        if qa.exists():
            with qa.open(encoding="utf-8") as fh:
                questions = [line.split("\t", 1)[0].replace("[", "").replace("]", "") for line in fh if "\t" in line]
        rng = random.Random(seed)
        queries = rng.sample(questions, min(n_queries, len(questions))) if questions else rng.sample(list(names), n_queries)
        return list(names), queries, f"MetaQA kb_reconstructed.txt ({kb})"
    rng = random.Random(seed)
    words = [
        "red", "night", "river", "city", "john", "smith", "love", "dark", "star", "house", "the", "last", "king",
        "summer", "war", "blue", "road", "maria", "garcia", "ghost", "island", "paris", "storm", "heart", "silver",
    ]
    names = sorted({" ".join(rng.choices(words, k=rng.randint(1, 4))) + f" {i}" for i in range(n_synthetic)})
    queries = [f"what films did {rng.choice(names)} star in" for _ in range(n_queries)]
    return names, queries, "synthetic"


def percentiles_ms(samples_s: list[float]) -> dict:
    arr = np.asarray(samples_s) * 1000.0
    return {"median_ms": float(np.median(arr)), "p95_ms": float(np.percentile(arr, 95)), "n": int(arr.size)}


def timed(fn, *args):
    t = time.perf_counter()
    out = fn(*args)
    return out, time.perf_counter() - t


# ---- embedding --------------------------------------------------------------------------------

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


def bench_embedding(names: list[str], queries: list[str], workdir: Path) -> tuple[dict, np.ndarray, np.ndarray]:
    os.environ["KGRAG_CACHE_DIR"] = str(workdir / "cache")  # a cold cache, outside the checkout
    from kgrag_utils.embeddings import load_embedder

    emb = load_embedder("minilm", device="cpu")
    _, load_s = timed(lambda: emb.model)
    vecs, cold_s = timed(lambda: emb.encode(names, progress=True))
    cold_stats = dict(emb.last_stats)

    same = load_embedder("minilm", device="cpu")  # new object: reads the shards from disk
    again, hit_s = timed(lambda: same.encode(names, progress=False))
    assert np.array_equal(again, vecs)
    hit_stats = dict(same.last_stats)
    _, hit_warm_s = timed(lambda: same.encode(names, progress=False))  # shards already mapped

    names_file = workdir / "names.json"
    names_file.write_text(json.dumps(names), encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1"}
    t = time.perf_counter()
    proc = subprocess.run([sys.executable, "-c", FRESH_PROCESS, str(names_file)], env=env, capture_output=True, text=True, check=True)
    fresh_total_s = time.perf_counter() - t
    fresh = json.loads(proc.stdout.strip().splitlines()[-1])

    qvecs, q_s = timed(lambda: emb.encode(queries, progress=False))
    q_stats = dict(emb.last_stats)
    mixed = names[: len(names) // 10] + [q + " ?" for q in queries]  # mostly cached, some new
    _, mixed_s = timed(lambda: emb.encode(mixed, progress=False))
    mixed_stats = dict(emb.last_stats)

    shards = len(list((emb.cache.folder / "shards").iterdir()))
    result = {
        "model_id": emb.model_id,
        "dim": emb.dim,
        "batch_size": emb.batch_size,
        "n_texts": len(names),
        "mean_chars": float(np.mean([len(s) for s in names])),
        "model_load_s": load_s,
        "cold_encode_s": cold_s,
        "cold_texts_per_s": len(names) / cold_s,
        "cold_stats": cold_stats,
        "cache_shards_after_cold": shards,
        "cache_hit_new_object_s": hit_s,
        "cache_hit_same_object_s": hit_warm_s,
        "cache_hit_rate": hit_stats["cache_hits"] / hit_stats["unique"],
        "cache_hit_fresh_process": {**fresh, "wall_s_including_python_start": fresh_total_s},
        "queries_cold_encode_s": q_s,
        "queries_stats": q_stats,
        "mixed_call": {"s": mixed_s, **mixed_stats},
    }
    return result, vecs, qvecs


class SqliteStore:
    """The alternative design: one SQLite file (WAL), (key BLOB primary key, float32 blob)."""

    def __init__(self, path: Path, dim: int):
        self.dim = dim
        self.con = sqlite3.connect(path, timeout=60)
        self.con.execute("PRAGMA journal_mode=WAL")
        self.con.execute("PRAGMA synchronous=NORMAL")
        self.con.execute("CREATE TABLE IF NOT EXISTS vec (k INTEGER PRIMARY KEY, v BLOB NOT NULL)")

    def put(self, keys: np.ndarray, vecs: np.ndarray, chunk: int = 1024) -> None:
        for s in range(0, len(keys), chunk):
            with self.con:
                self.con.executemany(
                    "INSERT OR IGNORE INTO vec VALUES (?, ?)", zip(keys[s : s + chunk].tolist(), (r.tobytes() for r in vecs[s : s + chunk]))
                )

    def get(self, keys: np.ndarray) -> np.ndarray:
        found: dict[int, bytes] = {}
        klist = keys.tolist()
        for s in range(0, len(klist), 30000):
            part = klist[s : s + 30000]
            found.update(self.con.execute(f"SELECT k, v FROM vec WHERE k IN ({','.join('?' * len(part))})", part).fetchall())
        blobs = [found[k] for k in klist if k in found]
        return np.frombuffer(b"".join(blobs), dtype=np.float32).reshape(-1, self.dim)


def bench_cache_stores(names: list[str], vecs: np.ndarray, workdir: Path) -> dict:
    from kgrag_utils.embeddings import VectorCache, text_keys

    keys = text_keys(names)
    out = {}
    shard = VectorCache(workdir / "cmp-shards", "bench-model")

    def shard_put():
        for s in range(0, len(keys), 1024):  # the same 1,024-text chunks the embedder writes
            shard.put(keys[s : s + 1024], vecs[s : s + 1024])

    _, put_s = timed(shard_put)
    reader = VectorCache(workdir / "cmp-shards", "bench-model")  # cold reader, like a new process
    (found, got), get_cold_s = timed(reader.get, keys)
    assert found.all() and np.array_equal(got, vecs)
    _, get_warm_s = timed(reader.get, keys)
    out["shards"] = {"put_s": put_s, "get_cold_s": get_cold_s, "get_warm_s": get_warm_s}

    db = SqliteStore(workdir / "cmp.sqlite", vecs.shape[1])
    _, put_s = timed(db.put, keys, vecs)
    db.con.close()
    db = SqliteStore(workdir / "cmp.sqlite", vecs.shape[1])
    got, get_cold_s = timed(db.get, keys)
    assert np.array_equal(got, vecs)
    _, get_warm_s = timed(db.get, keys)
    out["sqlite_wal"] = {"put_s": put_s, "get_cold_s": get_cold_s, "get_warm_s": get_warm_s}
    out["n"] = len(keys)
    out["chosen"] = "shards"
    return out


# ---- indexes ----------------------------------------------------------------------------------


def bench_index(index, vecs: np.ndarray, names: list[str], queries: np.ndarray, n_single: int, batch_sizes, exact_ids=None) -> tuple[dict, np.ndarray]:
    _, build_s = timed(index.add, vecs, names)
    index.search(queries[:4], K)  # warm-up
    single = []
    for q in queries[:n_single]:
        t = time.perf_counter()
        index.search(q[None, :], K)
        single.append(time.perf_counter() - t)
    batches = {}
    for bs in batch_sizes:
        times = []
        for s in range(0, len(queries) - bs + 1, bs):
            t = time.perf_counter()
            index.search(queries[s : s + bs], K)
            times.append(time.perf_counter() - t)
        if times:
            stats = percentiles_ms(times)
            stats["per_query_us"] = stats["median_ms"] * 1000 / bs
            batches[str(bs)] = stats
    _, ids = index.search(queries, K)
    result = {"build_s": build_s, "single_query": percentiles_ms(single), "batches": batches}
    if exact_ids is not None:
        result["recall_at_10_vs_exact"] = float(np.mean([len(set(a) & set(b)) / K for a, b in zip(ids, exact_ids)]))
    return result, ids


def bench_indexes(vecs: np.ndarray, names: list[str], qvecs: np.ndarray, workdir: Path, milvus: bool) -> dict:
    import faiss

    from kgrag_utils.vector_index import make_index

    out: dict = {"n_vectors": int(vecs.shape[0]), "dim": int(vecs.shape[1]), "n_queries": int(qvecs.shape[0]), "k": K, "metric": "ip"}
    flat = make_index("faiss", dim=vecs.shape[1], metric="ip", kind="flat", use_gpu=False)
    out["faiss_flat"], exact = bench_index(flat, vecs, names, qvecs, 300, (64, 1024))
    for kind in ("hnsw", "ivf"):
        index = make_index("faiss", dim=vecs.shape[1], metric="ip", kind=kind, use_gpu=False)
        out[f"faiss_{kind}"], _ = bench_index(index, vecs, names, qvecs, 300, (64, 1024), exact)
        out[f"faiss_{kind}"]["params"] = index.params
    folder, save_s = timed(flat.save, workdir / "flat-index")
    _, load_s = timed(lambda: __import__("kgrag_utils.vector_index", fromlist=["VectorIndex"]).VectorIndex.load(folder))
    out["faiss_flat"]["save_s"], out["faiss_flat"]["load_s"] = save_s, load_s
    out["faiss_threads"] = faiss.omp_get_max_threads()
    if milvus:
        try:
            import milvus_lite  # noqa: F401
            import pymilvus  # noqa: F401
        except ImportError as exc:
            out["milvus"] = f"skipped: {exc}"
            return out
        for kind in ("flat", "hnsw"):
            index = make_index("milvus", dim=vecs.shape[1], metric="ip", kind=kind, uri=str(workdir / "milvus" / "bench.db"), collection=f"bench_{kind}")
            out[f"milvus_lite_{kind}"], _ = bench_index(index, vecs, names, qvecs, 100, (64,), exact)
            index.close()
    return out


def environment() -> dict:
    import faiss
    import sentence_transformers
    import torch

    env = {
        "python": platform.python_version(),
        "platform": platform.platform(),
        "cpu_count": os.cpu_count(),
        "torch": torch.__version__,
        "torch_threads": torch.get_num_threads(),
        "sentence_transformers": sentence_transformers.__version__,
        "faiss": faiss.__version__,
        "numpy": np.__version__,
    }
    for pkg in ("pymilvus", "milvus_lite"):
        try:
            env[pkg] = __import__(pkg).__version__
        except Exception:  # not installed
            env[pkg] = None
    return env


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", required=True, help="JSON file to write (e.g. benchmarks/results/embed_index.json)")
    parser.add_argument("--data", default=None, help="data folder holding MetaQA/ (default: KGRAG_DATA_DIR or data/real)")
    parser.add_argument("--limit", type=int, default=None, help="use only the first N names (quick runs)")
    parser.add_argument("--queries", type=int, default=2048, help="number of query texts")
    parser.add_argument("--synthetic-size", type=int, default=43000)
    parser.add_argument("--no-milvus", action="store_true", help="skip the Milvus Lite measurements")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)

    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    if args.data:
        data = Path(args.data)
    else:
        from kgrag_utils.settings import data_dir

        data = data_dir()
    names, queries, source = load_names(data if data.exists() else None, args.synthetic_size, args.queries, args.seed)
    if args.limit:
        names = names[: args.limit]
    print(f"{len(names)} names, {len(queries)} queries from {source}", flush=True)

    load_start = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="kgrag-bench-") as tmp:
        workdir = Path(tmp)
        started = time.time()
        emb_result, vecs, qvecs = bench_embedding(names, queries, workdir)
        print(json.dumps({k: v for k, v in emb_result.items() if not isinstance(v, dict)}, indent=1), flush=True)
        store_result = bench_cache_stores(names, vecs, workdir)
        print(json.dumps(store_result, indent=1), flush=True)
        index_result = bench_indexes(vecs, names, qvecs, workdir, milvus=not args.no_milvus)
        print(json.dumps(index_result, indent=1), flush=True)
        record = {
            "benchmark": "embed_index",
            "source": "MetaQA" if source.startswith("MetaQA") else "synthetic",
            "n_names": len(names),
            "n_queries": len(queries),
            "query_texts": "MetaQA 1-hop test questions (brackets removed)" if source.startswith("MetaQA") else "synthetic questions",
            "started_at": time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(started)),
            "wall_s": time.time() - started,
            "environment": environment(),
            "load_average_1_5_15min": {"start": list(load_start), "end": list(os.getloadavg())},
            "embedding": emb_result,
            "cache_store_comparison": store_result,
            "index": index_result,
            "note": "shared CPU: compare load_average with cpu_count; latencies are noisy, read the medians.",
        }
    from kgrag_utils.records import write_result

    out = write_result(args.out, record, args)  # atomic, + provenance (command, arguments, commit, environment)
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
