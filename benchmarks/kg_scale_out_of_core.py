"""SimGRAG retrieval on a synthetic KG built out of core: 100M edges on one 24 GB machine.

    python benchmarks/kg_scale_out_of_core.py --edges 100000000 --entities 20000000 --train-size 65536 \
        --threads 1 --work /work/scale/100M --out benchmarks/results/kg_scale_100M.json

Resumable stages (finished ones are recorded in WORK/state.json and skipped; the facts, the index and the retrieval
rows also resume inside their stage), described in docs/SCALE.md: facts (kg_disk.write_facts), incidence
(kg_disk.build_incidence), index (structured synthetic entity vectors, NOT an embedder's, into a compressed FAISS
index), questions (1-3-hop random walks with planted answers), retrieval (ScaleRetriever, one question at a time),
exact (the same on a subset with the exact nearest entities). Peak RSS is each stage's process peak (memory-mapped
pages it touched count); the data live under --work, never in the repository.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np
from bench_common import load, machine, peak_rss_mb, synthetic_kg_args, write

from kgrag_utils.compressed_index import CompressedIndex, build_compressed_index, exact_topk
from kgrag_utils.kg_disk import DiskKG, build_incidence, write_facts
from kgrag_utils.methods.simgrag.stages.gsd_enumerate import GSDConfig, Incidence
from kgrag_utils.methods.simgrag.stages.pattern import Pattern, PatternEdge, PatternNode
from kgrag_utils.methods.simgrag.stages.scale_retriever import ScaleRetriever
from kgrag_utils.records import atomic_write_json
from kgrag_utils.synthetic import synthetic_fact_chunks
from kgrag_utils.synthetic_vectors import StructuredVectors


class State:
    """WORK/state.json: finished stages with their seconds and peak RSS."""

    def __init__(self, work: Path):
        self.path = work / "state.json"
        self.data = json.loads(self.path.read_text()) if self.path.is_file() else {}

    def done(self, stage: str) -> bool:
        return stage in self.data

    def record(self, stage: str, seconds: float, **extra) -> None:
        self.data[stage] = {"s": round(seconds, 2), "peak_rss_gb": round(peak_rss_mb() / 1024, 3), **extra}
        atomic_write_json(self.path, self.data)
        print(f"[{time.strftime('%H:%M:%S')}] {stage}: {self.data[stage]}", flush=True)


def vectors(args) -> tuple[StructuredVectors, StructuredVectors]:
    ent = StructuredVectors(args.entities, dim=args.dim, n_types=200, n_words=50_000, seed=args.seed)
    rel = StructuredVectors(args.relations, dim=args.dim, n_types=40, n_words=2_000, seed=args.seed + 1)
    return ent, rel


def stage_build(args, work: Path, state: State) -> None:
    kg_dir = work / "kg"
    if not state.done("facts"):
        t0 = time.perf_counter()
        chunks = synthetic_fact_chunks(args.entities, args.relations, seed=args.seed, alpha=args.alpha,
                                       chunk=args.chunk)
        meta = write_facts(kg_dir, chunks, args.entities, args.relations, num_edges=args.edges)
        state.record("facts", time.perf_counter() - t0, sampled=meta["sampled"])
    if not state.done("incidence"):
        t0 = time.perf_counter()
        meta = build_incidence(kg_dir, chunk=args.chunk)
        state.record("incidence", time.perf_counter() - t0, max_degree=meta["max_degree"])
    if not state.done("index"):
        ent, _ = vectors(args)
        t0 = time.perf_counter()
        meta = build_compressed_index(work / "entities.faiss", ent.rows, args.entities, args.dim, nlist=args.nlist,
                                      m=args.pq_m, train_size=args.train_size, chunk=args.vector_chunk,
                                      threads=args.threads, progress=None)
        # the stage's seconds are the index's own train + add seconds, which add up over resumed processes
        # (this process alone may have added only the last vectors)
        state.record("index", meta["train_s"] + meta["add_s"], s_this_process=round(time.perf_counter() - t0, 2),
                     **{k: meta[k] for k in ("factory", "bytes_per_vector", "train_s", "add_s")})


def incidence(work: Path) -> Incidence:
    """The search's CSR of the built KG, memory-mapped."""
    disk = DiskKG(work / "kg")
    return Incidence.from_arrays(*disk.incidence_arrays().values(), disk.num_relations)


def gsd_config(args) -> GSDConfig:
    return GSDConfig(top_k=3, entity_topk=16, relation_topk=16, time_limit_s=args.time_limit)


def chain_answers(inc: Incidence, start: int, chain: list[tuple[int, bool]], cap: int = 2_000_000) -> np.ndarray:
    """Entities the relation chain (relation, outgoing) reaches from start, following the incidence."""
    frontier = np.array([start], dtype=np.int64)
    for r, outgoing in chain:
        lo, hi = inc.indptr[frontier], inc.indptr[frontier + 1]
        if int((hi - lo).sum()) > cap:
            return np.empty(0, dtype=np.int64)  # too many to list: the question is dropped
        lengths = hi - lo
        pos = np.repeat(lo - (np.cumsum(lengths) - lengths), lengths) + np.arange(int(lengths.sum()))
        pos = pos[(inc.rel[pos] == r) & (inc.out[pos] == outgoing)]
        frontier = np.unique(inc.nbr[pos].astype(np.int64))
    return frontier


def make_questions(args, inc: Incidence) -> list[dict]:
    """Random walks with distinct entities from uniform start entities (1, 2, 3 hops in turn)."""
    rng = np.random.default_rng(args.seed + 7)
    out = []
    while len(out) < args.questions:
        hops = 1 + len(out) % 3
        start = int(rng.integers(args.entities))
        walk, chain = [start], []
        for _ in range(hops):
            x = walk[-1]
            a, b = int(inc.indptr[x]), int(inc.indptr[x + 1])
            if b == a:
                break
            p = int(rng.integers(a, b))
            y = int(inc.nbr[p])
            if y in walk:
                break
            walk.append(y)
            chain.append((int(inc.rel[p]), bool(inc.out[p])))
        if len(chain) < hops:
            continue
        answers = chain_answers(inc, start, chain)
        if answers.size == 0:
            continue
        out.append({"start": start, "walk": walk, "chain": chain, "answers": answers.tolist()})
    return out


def pattern_of(q: dict) -> Pattern:
    nodes = [PatternNode(f"e{q['start']}", True)] + [PatternNode(f"UNKNOWN entity {i}", False, "entity")
                                                    for i in range(1, len(q["chain"]) + 1)]
    edges = [PatternEdge(i, f"r{r}", i + 1) if out else PatternEdge(i + 1, f"r{r}", i)
             for i, (r, out) in enumerate(q["chain"])]
    return Pattern(nodes, edges, answer=len(q["chain"]), source="random-walk")


def query_vectors(args, q: dict, i: int, ent: StructuredVectors, rel: StructuredVectors):
    """The pattern's node and relation vectors: the true ones with noise (seeded by the question)."""
    rng = np.random.default_rng([args.seed, i])
    node = ent.query_rows([q["start"]], args.noise, rng)
    rels = rel.query_rows([r for r, _ in q["chain"]], args.noise, rng)
    return node, rels


class _FixedIndex:
    """Answers `search` with given candidate ids (the exact nearest entities of one query)."""

    def __init__(self, ids: np.ndarray):
        self.ids = ids

    def search(self, queries, k):
        return None, self.ids[None, :k]


def retrieve_one(retriever: ScaleRetriever, config: GSDConfig, q: dict, node, rels) -> dict:
    pattern = pattern_of(q)
    c0 = time.thread_time()
    cand = retriever.candidates(pattern, config, node, rels)
    result = retriever.search(pattern, config, cand)
    cpu_ms = (time.thread_time() - c0) * 1e3
    best = result.best
    top1 = int(best.nodes[pattern.answer]) if best is not None else None
    t = result.timings
    return {"hops": len(q["chain"]), "hit": top1 is not None and top1 in set(q["answers"]),
            "top1_is_walk_end": top1 == q["walk"][-1], "start_in_candidates": int(q["start"]) in set(
                cand.node_ids[0].tolist()), "timed_out": result.timed_out, "nodes_expanded": result.nodes_expanded,
            "node_search_ms": t["node_search_ms"], "relation_ms": t["relation_ms"], "enumerate_ms": t["enumerate_ms"],
            "total_ms": t["node_search_ms"] + t["relation_ms"] + t["enumerate_ms"], "cpu_ms": cpu_ms}


def stage_retrieval(args, work: Path, state: State, questions: list[dict]) -> list[dict]:
    """Compressed-index retrieval for every question (rows kept in WORK/retrieval.jsonl, resumed)."""
    import faiss

    faiss.omp_set_num_threads(1)  # one query at a time
    ent, rel = vectors(args)
    index = CompressedIndex(work / "entities.faiss", nprobe=args.nprobe, ef_search=args.ef_search)
    retriever = ScaleRetriever(incidence(work), index, ent.rows, rel.rows(np.arange(args.relations)), rerank=args.rerank)
    config = gsd_config(args)
    path = work / f"retrieval_nprobe{args.nprobe}.jsonl"
    rows = [json.loads(x) for x in path.read_text().splitlines()] if path.is_file() else []
    load_start = load()
    t0 = time.perf_counter()
    with open(path, "a") as f:
        for i in range(len(rows), len(questions)):
            node, rels = query_vectors(args, questions[i], i, ent, rel)
            row = retrieve_one(retriever, config, questions[i], node, rels)
            rows.append(row)
            f.write(json.dumps(row) + "\n")
            if (i + 1) % 100 == 0:
                f.flush()
                print(f"  retrieval {i + 1}/{len(questions)}", flush=True)
    state.record(f"retrieval_nprobe{args.nprobe}", time.perf_counter() - t0, index_params=index.params,
                 load_average_start=load_start, load_average_end=load())
    return rows


def stage_exact(args, work: Path, state: State, questions: list[dict], subset: list[int]) -> list[dict]:
    """The same retrieval on `subset` with the exact nearest entities instead of the index's."""
    path = work / "retrieval_exact.json"
    if path.is_file():
        return json.loads(path.read_text())
    ent, rel = vectors(args)
    t0 = time.perf_counter()
    queries = np.concatenate([query_vectors(args, questions[i], i, ent, rel)[0] for i in subset])
    nearest = exact_topk(ent.rows, args.entities, queries, 16 * args.rerank, chunk=args.vector_chunk)
    search_s = time.perf_counter() - t0
    inc, config, relations, rows = incidence(work), gsd_config(args), rel.rows(np.arange(args.relations)), []
    for row_i, i in enumerate(subset):
        retriever = ScaleRetriever(inc, _FixedIndex(nearest[row_i]), ent.rows, relations, rerank=args.rerank)
        node, rels = query_vectors(args, questions[i], i, ent, rel)
        rows.append({"question": i, **retrieve_one(retriever, config, questions[i], node, rels)})
    path.write_text(json.dumps(rows) + "\n")
    state.record("exact", time.perf_counter() - t0, exact_search_s=round(search_s, 2), questions=len(subset))
    return rows


def pct(values, q):
    return round(float(np.percentile(np.asarray(values, dtype=np.float64), q)), 3) if len(values) else None


def _header(args) -> dict:
    return {"benchmark": "kg_scale_out_of_core", "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
            "params": {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()},
            "machine": machine(load_average_at_end=load())}


def summarize(args, work: Path, state: State, questions, rows, exact_rows) -> dict:
    disk = DiskKG(work / "kg")
    by_q = {r["question"]: r for r in exact_rows}
    sub = sorted(by_q)
    compressed_sub = float(np.mean([rows[i]["hit"] for i in sub])) if sub else None
    exact_rate = float(np.mean([by_q[i]["hit"] for i in sub])) if sub else None
    build_stages = ("facts", "incidence", "index")
    total = [r["total_ms"] for r in rows]
    cpu = [r["cpu_ms"] for r in rows if "cpu_ms" in r]
    return {
        **_header(args), "edges": disk.num_edges, "entities": disk.num_entities, "relations": disk.num_relations,
        "peak_rss_gb": max(v["peak_rss_gb"] for v in state.data.values()),
        "build_s": round(sum(state.data[s]["s"] for s in build_stages), 1),
        "retrieval_ms_median": pct(total, 50), "retrieval_ms_p95": pct(total, 95),
        "retrieval_cpu_ms_median": pct(cpu, 50) if cpu else None, "retrieval_cpu_ms_p95": pct(cpu, 95) if cpu else None,
        "planted_hit_rate": round(float(np.mean([r["hit"] for r in rows])), 4),
        "planted_hit_rate_subset_compressed": round(compressed_sub, 4) if sub else None,
        "planted_hit_rate_subset_exact": round(exact_rate, 4) if sub else None,
        "hit_rate_vs_exact": round(compressed_sub / exact_rate, 4) if sub and exact_rate else None,
        "n_questions": len(rows), "n_exact_subset": len(sub),
        "by_hops": {h: {"n": sum(r["hops"] == h for r in rows),
                        "hit_rate": round(float(np.mean([r["hit"] for r in rows if r["hops"] == h])), 4),
                        "ms_median": pct([r["total_ms"] for r in rows if r["hops"] == h], 50),
                        "ms_p95": pct([r["total_ms"] for r in rows if r["hops"] == h], 95)} for h in (1, 2, 3)},
        "ms_parts": {k: {"median": pct([r[k] for r in rows], 50), "p95": pct([r[k] for r in rows], 95)}
                     for k in ("node_search_ms", "relation_ms", "enumerate_ms")},
        "start_in_candidates": round(float(np.mean([r["start_in_candidates"] for r in rows])), 4),
        "timed_out": sum(r["timed_out"] for r in rows),
        "stages": state.data,
        "bytes_on_disk": {"kg": disk.nbytes_on_disk(), "index": (work / "entities.faiss").stat().st_size},
        "max_degree": disk.meta.get("max_degree"),
        "definitions": {
            "planted_hit_rate": "share of questions whose top-1 subgraph's answer node is an entity the walk's relation "
                                "chain (relations and directions) reaches from its start",
            "retrieval_ms": "per question, one at a time, wall clock (waiting for a core included): index search, exact "
                            "re-scoring, relation distances, enumeration; vectors given, no embedder",
            "retrieval_cpu_ms": "the same span in the thread's CPU time (FAISS with one thread, in the calling one)",
            "peak_rss_gb": "largest ru_maxrss over the stages' processes (memory-mapped pages they touched count)",
        },
    }


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    synthetic_kg_args(ap, edges_per_entity=5, relations=1000)
    ap.add_argument("--dim", type=int, default=384)
    ap.add_argument("--nlist", type=int, default=4096)
    ap.add_argument("--pq-m", type=int, default=48, help="PQ bytes per vector")
    ap.add_argument("--train-size", type=int, default=200_000)
    ap.add_argument("--nprobe", type=int, default=16)
    ap.add_argument("--ef-search", type=int, default=64)
    ap.add_argument("--rerank", type=int, default=4, help="index candidates per kept entity, re-scored exactly")
    ap.add_argument("--noise", type=float, default=0.3, help="norm of the noise on query vectors (about)")
    ap.add_argument("--questions", type=int, default=1000)
    ap.add_argument("--exact-subset", type=int, default=200)
    ap.add_argument("--time-limit", type=float, default=2.0)
    ap.add_argument("--chunk", type=int, default=2_000_000, help="facts per step of the KG build")
    ap.add_argument("--vector-chunk", type=int, default=20_000, help="vectors per step of the index build")
    ap.add_argument("--threads", type=int, default=2, help="FAISS threads while building")
    ap.add_argument("--work", type=Path, required=True, help="folder for the KG, the index and the rows")
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args(argv)
    args.entities = args.entities or max(10, args.edges // 5)
    args.work.mkdir(parents=True, exist_ok=True)
    state = State(args.work)
    stage_build(args, args.work, state)
    qpath = args.work / "questions.json"
    if not qpath.is_file():
        t0 = time.perf_counter()
        qpath.write_text(json.dumps(make_questions(args, incidence(args.work))))
        state.record("questions", time.perf_counter() - t0)
    questions = json.loads(qpath.read_text())
    rows = stage_retrieval(args, args.work, state, questions)
    subset = list(range(0, len(questions), max(1, len(questions) // max(args.exact_subset, 1))))[: args.exact_subset]
    exact_rows = stage_exact(args, args.work, state, questions, subset)
    result = summarize(args, args.work, state, questions, rows, exact_rows)
    print(json.dumps({k: result[k] for k in ("edges", "entities", "peak_rss_gb", "build_s", "retrieval_ms_median",
                                              "retrieval_ms_p95", "planted_hit_rate", "hit_rate_vs_exact")}, indent=1))
    if args.out is not None:
        write(args.out, result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
