"""Scale benchmark of the in-memory KG layer: build time, memory and query latency on a synthetic power-law KG.

    python benchmarks/kg_scale.py --edges 10000000 --out benchmarks/results/kg_scale_10M.json

For N distinct synthetic facts (power-law degrees, a few hundred relations): the seconds to sample the ids, make
the names and build the KG (`KG.from_ids`: dedupe and both CSR indexes), peak RSS and the bytes of the KG's arrays;
per-call latency (median / p95) of neighbour lookups, 3-step relation chains (random walks, so they exist) and
2-hop k-hop; in a fresh child process, `KG.load` of the same KG written as `h|r|t` text and the .npz round trip;
and the MetaQA KB's load when the data folder has it. Results: data/README.md, docs/RESULTS.md.
"""

from __future__ import annotations

import argparse
import json
import resource
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from bench_common import json_child, load, machine, peak_rss_mb, percentiles, synthetic_kg_args, timed, write

from kgrag_utils import settings
from kgrag_utils.kg import KG
from kgrag_utils.synthetic import synthetic_ids


def counts(values: list[int]) -> dict[str, float]:
    arr = np.asarray(values)
    return {"median": float(np.median(arr)), "p95": float(np.percentile(arr, 95)), "max": int(arr.max())}


def latencies(fn, args_list) -> tuple[dict, list]:
    """Microsecond percentiles of `fn` called once per argument tuple (one call at a time), and its results."""
    times, results = [], []
    for args in args_list:
        t0 = time.perf_counter_ns()
        results.append(fn(*args))
        times.append((time.perf_counter_ns() - t0) / 1e3)
    return percentiles(times, "us", digits=2), results


def random_walk_chains(kg: KG, n: int, steps: int, rng: np.random.Generator):
    """(start, chain) pairs read off random walks, so every chain has at least one complete path."""
    candidates, out = np.flatnonzero(kg.degree > 0), []
    while len(out) < n:
        node = start = int(rng.choice(candidates))
        chain = []
        for _ in range(steps):
            nbrs, rels, _ = kg.neighbors(node, direction="both")
            i = int(rng.integers(nbrs.size))
            chain.append((int(rels[i]), bool(i < kg.out_degree[node])))
            node = int(nbrs[i])
        out.append((start, chain))
    return out


def build_stage(args) -> tuple[KG, dict]:
    """The synthetic KG built from ids: seconds per step, peak RSS, degree figures."""
    rss0 = peak_rss_mb()
    (heads, rels, tails, n_ent, n_rel), gen_s = timed(synthetic_ids, args.edges, args.entities, args.relations,
                                                      args.seed, args.alpha)
    t0 = time.perf_counter()
    entity_names = np.array([f"e{i}" for i in range(n_ent)], dtype=object)
    relation_names = np.array([f"r{i}" for i in range(n_rel)], dtype=object)
    names_s = time.perf_counter() - t0
    kg, build_s = timed(KG.from_ids, heads, rels, tails, entity_names, relation_names, name=f"synthetic-{args.edges}")
    print(f"built {kg} in {build_s:.2f}s (sampling {gen_s:.2f}s); peak RSS {peak_rss_mb():.0f} MB", flush=True)
    return kg, {"num_edges": kg.num_edges, "num_entities": n_ent, "num_relations": n_rel, "sample_ids_s": round(gen_s, 3),
                "make_names_s": round(names_s, 3), "from_ids_s": round(build_s, 3),
                "total_s": round(gen_s + names_s + build_s, 3), "peak_rss_mb_before": round(rss0, 1),
                "peak_rss_mb_after_build": round(peak_rss_mb(), 1), "max_out_degree": int(kg.out_degree.max()),
                "max_in_degree": int(kg.in_degree.max()), "mean_degree": round(float(kg.degree.mean()), 2),
                "isolated_entities": int((kg.degree == 0).sum()),
                "largest_relation_share": round(float(np.bincount(kg.rels).max() / kg.num_edges), 4)}


def latency_stage(kg: KG, q: int, seed: int) -> dict:
    """Per-call latencies of the lookups (one call at a time, warm process) and the sizes of their results."""
    rng = np.random.default_rng(seed + 1)
    t_all, res_all = latencies(lambda e: kg.neighbors(int(e)), [(e,) for e in rng.integers(0, kg.num_entities, size=q)])
    edges = rng.integers(0, kg.num_edges, size=q)
    t_rel, res_rel = latencies(lambda e, r: kg.neighbors(e, r, "out"), [(int(kg.heads[e]), int(kg.rels[e])) for e in edges])
    t_rel_in, _ = latencies(lambda e, r: kg.neighbors(e, r, "in"), [(int(kg.tails[e]), int(kg.rels[e])) for e in edges])
    chains = random_walk_chains(kg, q, 3, rng)
    t_chain, res_chain = latencies(kg.follow_chain, chains)
    assert all(r.reached.size > 0 for r in res_chain), "a random-walk chain must reach something"
    t_khop, res_khop = latencies(lambda s: kg.khop_edges([s], 2, max_edges=100_000), [(c[0],) for c in chains[:200]])
    return {
        "neighbors_out_all_relations": {**t_all, "results": counts([r[0].size for r in res_all])},
        "neighbors_out_by_relation": {**t_rel, "results": counts([r[0].size for r in res_rel])},
        "neighbors_in_by_relation": t_rel_in,
        "follow_chain_3_steps": {**t_chain, "reached": counts([r.reached.size for r in res_chain]),
                                 "facts_on_paths": counts([r.num_facts for r in res_chain]),
                                 "max_frontier_entities": counts([max(f.size for f in r.frontiers) for r in res_chain])},
        "khop_2_max_100k_edges": {**t_khop, "edges": counts([r.size for r in res_khop]),
                                  "truncated_share": float(np.mean([r.size >= 100_000 for r in res_khop]))},
        "method": "time.perf_counter_ns around each call, one call at a time, warm process; starts uniform over "
                  "entities (by-relation lookups: endpoints of random facts; chains: random walks, both directions)",
    }


def write_text(kg: KG, path: Path) -> float:
    """The KG as `h|r|t` lines (pyarrow writer, no quoting): the seconds it took."""
    import pyarrow as pa
    from pyarrow import csv as pacsv

    table = pa.table({"h": pa.array(kg.entity_names[kg.heads], type=pa.string()),
                      "r": pa.array(kg.relation_names[kg.rels], type=pa.string()),
                      "t": pa.array(kg.entity_names[kg.tails], type=pa.string())})
    options = pacsv.WriteOptions(include_header=False, delimiter="|", quoting_style="none")
    return timed(pacsv.write_csv, table, str(path), write_options=options)[1]


def text_load_in_child(text: Path, write_s: float) -> dict:
    """`KG.load` of the written text and the npz round trip in a fresh child process (`--stage-load`)."""
    child = json_child([sys.executable, __file__, "--stage-load", str(text)])
    return {"file_bytes": text.stat().st_size, "write_s": round(write_s, 3), **child,
            "child_peak_rss_mb": round(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024, 1),
            "method": "fresh child process: KG.load (pyarrow reader) then save/load_npz; "
                      "child_peak_rss_mb = getrusage(RUSAGE_CHILDREN).ru_maxrss"}


def load_and_npz(path: Path, out_dir: Path) -> dict:
    """`KG.load` of a text KG, then its npz save and load (seconds); the child stage and the MetaQA stage."""
    kg, load_s = timed(KG.load, path)
    rss = peak_rss_mb()
    npz, save_s = timed(kg.save, out_dir / (path.stem + ".npz"))
    sizes = {"num_edges": kg.num_edges, "num_entities": kg.num_entities, "num_relations": kg.num_relations}
    del kg
    _, npz_s = timed(KG.load_npz, npz)
    return {"load_s": round(load_s, 3), "peak_rss_mb_after_load": round(rss, 1), "npz_save_s": round(save_s, 3),
            "npz_load_s": round(npz_s, 3), "npz_bytes": npz.stat().st_size, **sizes}


def metaqa_stage() -> dict:
    """The real MetaQA KB (skipped, saying why, without the file)."""
    kb = settings.data_dir() / "MetaQA" / "kb_reconstructed.txt"
    if not kb.is_file():
        return {"skipped": f"MetaQA KB not found ({kb})"}
    with tempfile.TemporaryDirectory(prefix="kg_scale_") as tmp:
        return {"path": str(kb), **load_and_npz(kb, Path(tmp)),
                "expected": {"num_edges": 128_185, "num_entities": 42_718, "num_relations": 9}}


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    synthetic_kg_args(parser, edges_per_entity=10, relations=300)  # synthetic_ids' default entity count
    parser.add_argument("--queries", type=int, default=1000)
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--stage-load", type=Path, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.stage_load:  # the child: text load and npz round trip of the parent's file
        r = load_and_npz(args.stage_load, args.stage_load.parent)
        print(json.dumps({"text_load_s": r.pop("load_s"), "peak_rss_mb_after_text_load": r.pop("peak_rss_mb_after_load"), **r}))
        return {}
    report: dict = {"benchmark": "kg_scale", "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
                    "machine": machine(numpy=np.__version__),
                    "memory_method": "peak_rss_mb: resource.getrusage(RUSAGE_SELF).ru_maxrss of the whole process "
                                     "(interpreter + sampling temporaries + KG)"}
    kg, report["build"] = build_stage(args)
    report["bytes"] = kg.nbytes()
    report["latency"] = latency_stage(kg, args.queries, args.seed)
    with tempfile.TemporaryDirectory(prefix="kg_scale_") as tmp:
        write_s = write_text(kg, Path(tmp) / "kb.txt")
        del kg  # the child loads with this process's KG freed
        report["text_load"] = text_load_in_child(Path(tmp) / "kb.txt", write_s)
    report["metaqa"] = metaqa_stage()
    report.update(peak_rss_mb_end=round(peak_rss_mb(), 1), load_at_end=load())
    print(json.dumps({k: report[k] for k in ("latency", "text_load", "metaqa")}, indent=1))
    if args.out is not None:
        write(args.out, report, args)
    return report


if __name__ == "__main__":
    main()
