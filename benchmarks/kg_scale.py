"""Scale benchmark of the KG layer: build time, memory and query latency on a synthetic power-law KG.

    python benchmarks/kg_scale.py --edges 10000000 --out benchmarks/results/kg_scale_10M.json

Measures, for a synthetic KG of N distinct facts (power-law degrees, a few hundred relations):
  * time to sample the ids, to make the names, and to build the KG (dedupe + both CSR indexes);
  * memory: peak resident set size of the process (resource.getrusage ru_maxrss, which includes
    the interpreter and the sampling temporaries) and the peak of Python/numpy allocations
    during `KG.from_ids` alone (tracemalloc, a second build);
  * bytes held by the KG's arrays;
  * median / p95 latency of neighbour lookups and of 3-step relation-chain following
    (random starts, chains taken from random walks so that they exist), and of 2-hop k-hop;
  * with --text-load (default on): the time and peak RSS, in a fresh child process, of
    `KG.load` on the same KG written as `h|r|t` text, and of the .npz cache round trip;
  * the load time of the MetaQA KB when present (--metaqa, default: the data directory).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import subprocess
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

import numpy as np

from kgrag_utils import settings
from kgrag_utils.kg import KG
from kgrag_utils.synthetic import synthetic_ids


def peak_rss_mb() -> float:
    """Peak resident set size of this process so far (Linux reports ru_maxrss in KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def summarize_ns(samples: list[int]) -> dict[str, float]:
    arr = np.asarray(samples, dtype=np.float64) / 1e3
    return {"n": int(arr.size), "median_us": round(float(np.median(arr)), 2),
            "p95_us": round(float(np.percentile(arr, 95)), 2), "max_us": round(float(arr.max()), 2)}


def summarize_counts(values: list[int]) -> dict[str, float]:
    arr = np.asarray(values)
    return {"median": float(np.median(arr)), "p95": float(np.percentile(arr, 95)), "max": int(arr.max())}


def random_walk_chains(kg: KG, n: int, steps: int, rng: np.random.Generator):
    """(start, chain) pairs read off random walks, so every chain has at least one complete path."""
    candidates = np.flatnonzero(kg.degree > 0)
    out = []
    while len(out) < n:
        start = int(rng.choice(candidates))
        node, chain = start, []
        for _ in range(steps):
            nbrs, rels, _ = kg.neighbors(node, direction="both")
            i = int(rng.integers(nbrs.size))
            chain.append((int(rels[i]), bool(i < kg.out_degree[node])))
            node = int(nbrs[i])
        out.append((start, chain))
    return out


def time_calls(fn, args_list) -> tuple[list[int], list]:
    times, results = [], []
    for args in args_list:
        t0 = time.perf_counter_ns()
        res = fn(*args)
        times.append(time.perf_counter_ns() - t0)
        results.append(res)
    return times, results


def default_metaqa_path() -> Path | None:
    for base in (settings.data_dir(), settings.repo_root().parent / "shared" / "data"):
        cand = base / "MetaQA" / "kb_reconstructed.txt"
        if cand.is_file():
            return cand
    return None


def write_text(kg: KG, path: Path) -> None:
    """The KG as `h|r|t` lines (pyarrow writer, no quoting)."""
    import pyarrow as pa
    from pyarrow import csv as pacsv

    table = pa.table({
        "h": pa.array(kg.entity_names[kg.heads], type=pa.string()),
        "r": pa.array(kg.relation_names[kg.rels], type=pa.string()),
        "t": pa.array(kg.entity_names[kg.tails], type=pa.string()),
    })
    pacsv.write_csv(table, str(path), write_options=pacsv.WriteOptions(
        include_header=False, delimiter="|", quoting_style="none"))


def stage_load(path: str) -> dict:
    """Child-process stage: load a text KG, then round-trip it through the npz cache."""
    t0 = time.perf_counter()
    kg = KG.load(path)
    load_s = time.perf_counter() - t0
    rss_after_load = peak_rss_mb()
    npz = Path(path).with_suffix(".npz")
    t0 = time.perf_counter()
    kg.save(npz)
    save_s = time.perf_counter() - t0
    del kg
    t0 = time.perf_counter()
    back = KG.load_npz(npz)
    npz_load_s = time.perf_counter() - t0
    return {"text_load_s": round(load_s, 3), "peak_rss_mb_after_text_load": round(rss_after_load, 1),
            "npz_save_s": round(save_s, 3), "npz_load_s": round(npz_load_s, 3),
            "npz_bytes": npz.stat().st_size, "num_edges": back.num_edges, "num_entities": back.num_entities,
            "num_relations": back.num_relations}


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--edges", type=int, default=1_000_000)
    parser.add_argument("--entities", type=int, default=None, help="default: edges // 10")
    parser.add_argument("--relations", type=int, default=300)
    parser.add_argument("--alpha", type=float, default=0.75, help="Zipf exponent of entity popularity")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--queries", type=int, default=1000)
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--metaqa", type=Path, default=None, help="MetaQA kb file (default: the data directory)")
    parser.add_argument("--no-text-load", action="store_true", help="skip the text write / KG.load stage")
    parser.add_argument("--no-tracemalloc", action="store_true", help="skip the second, traced build")
    parser.add_argument("--stage-load", default=None, help=argparse.SUPPRESS)
    return parser


def build_stage(args) -> tuple[KG, dict]:
    """The synthetic KG built from ids (timed, peak RSS), and again under tracemalloc unless turned off."""
    rss0 = peak_rss_mb()
    t0 = time.perf_counter()
    heads, rels, tails, n_ent, n_rel = synthetic_ids(args.edges, args.entities, args.relations, args.seed, args.alpha)
    gen_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    entity_names = np.array([f"e{i}" for i in range(n_ent)], dtype=object)
    relation_names = np.array([f"r{i}" for i in range(n_rel)], dtype=object)
    names_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    kg = KG.from_ids(heads, rels, tails, entity_names, relation_names, name=f"synthetic-{args.edges}")
    build_s = time.perf_counter() - t0
    rss_build = peak_rss_mb()
    build = {
        "num_edges": kg.num_edges, "num_entities": n_ent, "num_relations": n_rel,
        "sample_ids_s": round(gen_s, 3), "make_names_s": round(names_s, 3), "from_ids_s": round(build_s, 3),
        "total_s": round(gen_s + names_s + build_s, 3),
        "peak_rss_mb_before": round(rss0, 1), "peak_rss_mb_after_build": round(rss_build, 1),
        "max_out_degree": int(kg.out_degree.max()), "max_in_degree": int(kg.in_degree.max()),
        "mean_degree": round(float(kg.degree.mean()), 2),
        "isolated_entities": int((kg.degree == 0).sum()),
        "largest_relation_share": round(float(np.bincount(kg.rels).max() / kg.num_edges), 4),
    }
    if not args.no_tracemalloc:
        tracemalloc.start()
        t0 = time.perf_counter()
        KG.from_ids(heads, rels, tails, entity_names, relation_names)
        traced_s = time.perf_counter() - t0
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        build["traced_build_peak_mb"] = round(peak / 2**20, 1)
        build["traced_build_s"] = round(traced_s, 3)
    print(f"built {kg} in {build_s:.2f}s (sampling {gen_s:.2f}s); peak RSS {rss_build:.0f} MB", flush=True)
    return kg, build


def latency_stage(kg: KG, q: int, seed: int) -> dict:
    """Per-call latencies of the lookups (one call at a time, warm process) and the sizes of their results."""
    rng = np.random.default_rng(seed + 1)
    ents = rng.integers(0, kg.num_entities, size=q)
    t_all, res_all = time_calls(lambda e: kg.neighbors(int(e)), [(e,) for e in ents])
    sample_edges = rng.integers(0, kg.num_edges, size=q)
    by_rel = [(int(kg.heads[e]), int(kg.rels[e])) for e in sample_edges]
    t_rel, res_rel = time_calls(lambda e, r: kg.neighbors(e, r, "out"), by_rel)
    by_rel_in = [(int(kg.tails[e]), int(kg.rels[e])) for e in sample_edges]
    t_rel_in, _ = time_calls(lambda e, r: kg.neighbors(e, r, "in"), by_rel_in)
    chains = random_walk_chains(kg, q, 3, rng)
    t_chain, res_chain = time_calls(lambda s, c: kg.follow_chain(s, c), chains)
    assert all(r.reached.size > 0 for r in res_chain), "a random-walk chain must reach something"
    t_khop, res_khop = time_calls(lambda s: kg.khop_edges([s], 2, max_edges=100_000), [(c[0],) for c in chains[:200]])
    return {
        "neighbors_out_all_relations": {**summarize_ns(t_all),
                                        "results": summarize_counts([r[0].size for r in res_all])},
        "neighbors_out_by_relation": {**summarize_ns(t_rel), "results": summarize_counts([r[0].size for r in res_rel])},
        "neighbors_in_by_relation": summarize_ns(t_rel_in),
        "follow_chain_3_steps": {**summarize_ns(t_chain),
                                 "reached": summarize_counts([r.reached.size for r in res_chain]),
                                 "facts_on_paths": summarize_counts([r.num_facts for r in res_chain]),
                                 "max_frontier_entities": summarize_counts(
                                     [max(f.size for f in r.frontiers) for r in res_chain])},
        "khop_2_max_100k_edges": {**summarize_ns(t_khop), "edges": summarize_counts([r.size for r in res_khop]),
                                  "truncated_share": float(np.mean([r.size >= 100_000 for r in res_khop]))},
        "method": "time.perf_counter_ns around each call, one call at a time, warm process; "
                  "starts uniform over entities (by-relation lookups: endpoints of random facts; "
                  "chains: random walks over both directions)",
    }


def text_load_in_child(text: Path, write_s: float) -> dict:
    """KG.load of the written text file in a fresh child process (`--stage-load`), with its peak RSS."""
    proc = subprocess.run([sys.executable, __file__, "--stage-load", str(text)],
                          capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise SystemExit(f"text-load stage failed:\n{proc.stderr[-2000:]}")
    child = json.loads(proc.stdout.strip().splitlines()[-1])
    child_peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    return {"file_bytes": text.stat().st_size, "write_s": round(write_s, 3), **child,
            "child_peak_rss_mb": round(child_peak, 1),
            "method": "fresh child process: KG.load (pyarrow reader) then save/load_npz; "
                      "child_peak_rss_mb = getrusage(RUSAGE_CHILDREN).ru_maxrss"}


def metaqa_stage(metaqa: Path | None) -> dict:
    """The real MetaQA KB: text load, npz save and load (skipped, saying why, without the file)."""
    if metaqa is None or not Path(metaqa).is_file():
        return {"skipped": f"MetaQA KB not found ({metaqa or 'no data directory holds it'})"}
    t0 = time.perf_counter()
    mkg = KG.load(metaqa)
    load_s = time.perf_counter() - t0
    with tempfile.TemporaryDirectory(prefix="kg_scale_") as tmp:
        t1 = time.perf_counter()
        path = mkg.save(Path(tmp) / "metaqa.npz")
        save_s = time.perf_counter() - t1
        t1 = time.perf_counter()
        KG.load_npz(path)
        npz_s = time.perf_counter() - t1
    return {"path": str(metaqa), "load_s": round(load_s, 3), "npz_save_s": round(save_s, 3),
            "npz_load_s": round(npz_s, 3), "num_edges": mkg.num_edges,
            "num_entities": mkg.num_entities, "num_relations": mkg.num_relations,
            "expected": {"num_edges": 128_185, "num_entities": 42_718, "num_relations": 9}}


def main(argv: list[str] | None = None) -> dict:
    args = _parser().parse_args(argv)
    if args.stage_load:
        print(json.dumps(stage_load(args.stage_load)))
        return {}

    report: dict = {
        "benchmark": "kg_scale",
        "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "machine": {"platform": platform.platform(), "python": platform.python_version(),
                    "numpy": np.__version__, "cpus": os.cpu_count()},
        "params": {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items() if k != "stage_load"},
        "memory_method": ("peak_rss_mb: resource.getrusage(RUSAGE_SELF).ru_maxrss of the whole process "
                          "(interpreter + sampling temporaries + KG); traced_build_peak_mb: tracemalloc peak "
                          "of numpy/Python allocations inside KG.from_ids alone (a second build)"),
    }
    kg, report["build"] = build_stage(args)
    report["bytes"] = kg.nbytes()
    report["latency"] = latency_stage(kg, args.queries, args.seed)
    print(json.dumps(report["latency"], indent=1), flush=True)

    if not args.no_text_load:
        with tempfile.TemporaryDirectory(prefix="kg_scale_") as tmp:
            text = Path(tmp) / "kb.txt"
            t0 = time.perf_counter()
            write_text(kg, text)
            write_s = time.perf_counter() - t0
            del kg  # the child loads with this process's KG freed
            report["text_load"] = text_load_in_child(text, write_s)
            print(json.dumps(report["text_load"], indent=1), flush=True)

    report["metaqa"] = metaqa_stage(args.metaqa or default_metaqa_path())
    print(json.dumps(report["metaqa"], indent=1))
    report["peak_rss_mb_end"] = round(peak_rss_mb(), 1)

    if args.out is not None:
        from kgrag_utils.records import write_result

        print(f"wrote {write_result(args.out, report, args)}")  # atomic, + provenance (command, arguments, commit)
    return report

if __name__ == "__main__":
    main()
