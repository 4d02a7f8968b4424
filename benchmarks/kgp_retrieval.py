"""KGP retrieval (and optionally the reader) on HotpotQA / MuSiQue, plus the two trade-off sweeps.

    python benchmarks/kgp_retrieval.py --dataset musique --graph tfidf,knn,entity,union --traversal nollm \
        --limit 100 --out benchmarks/results/kgp_musique_nollm.json
    python benchmarks/kgp_retrieval.py --dataset hotpotqa --graph entity --traversal llm --reader \
        --limit 50 --llm qwen2.5-coder-0.5b --run-name kgp-bench-hotpotqa-llm --out benchmarks/results/kgp_hotpotqa_llm.json
    python benchmarks/kgp_retrieval.py --dataset musique --sweep density --limit 50 --out benchmarks/results/kgp_musique_density.json
    python benchmarks/kgp_retrieval.py --dataset musique --sweep branching --limit 50 --out ...

Writes recall@k and SF-EM@k (k = 1, 5, 10, 20, 30; supporting sentences for HotpotQA's sentence
windows, documents otherwise, and documents always as doc_*), graph density and degree, passages
per question, and the latency of building the set, the graph and the traversal (and the reader).
Every (graph, traversal) pair is one entry of "results". With --run-name the per-example records
go through RunRecorder (results/<run-name>/), so an interrupted LLM run resumes where it stopped.
`--figures` draws the sweep figures into figures/. Only counts, metrics and timings are written.

    python benchmarks/kgp_retrieval.py --merge benchmarks/results/kgp_musique_llm_shard0of2.json,\
        benchmarks/results/kgp_musique_llm_shard1of2.json --out benchmarks/results/kgp_musique_llm.json
    python benchmarks/kgp_retrieval.py --plot-from benchmarks/results/kgp_hotpotqa_density.json,\
        benchmarks/results/kgp_musique_density.json,benchmarks/results/kgp_hotpotqa_branching.json,\
        benchmarks/results/kgp_musique_branching.json

`--merge` pools the per-question records of a sharded run (results/<run-name>-shard<i>of<n>/) into one
summary - recomputed from the records, never an average of the shards' averages - after checking that
the shards are complete, disjoint and together exactly the questions of `--limit`. `--plot-from`
draws the two combined sweep figures (kgp_density_recall, kgp_branching_recall) from saved sweeps.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path

from kgrag_utils.demos import DEMO_POOLS  # noqa: E402
from kgrag_utils.datasets.arguments import (add_dataset_arguments, check_dataset_arguments, dataset_from_args,
                                            evaluation_params_from_args)

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

os.environ.setdefault("HF_HUB_OFFLINE", "1")


def _csv(text: str) -> list[str]:
    return [t.strip() for t in str(text).split(",") if t.strip()]


def _environment() -> dict:
    return {"python": platform.python_version(), "machine": platform.machine(), "cpus": os.cpu_count(),
            "platform": platform.platform()}


def run_variant(ds, cfg, limit_desc: str, run_name: str | None, progress: bool, llm=None, embedder=None,
                only_done: bool = False, evaluation: dict | None = None):
    """One (graph, traversal) configuration over the dataset: (entry with summary + set/graph/latency
    stats, the KGP object so that the next variant reuses its loaded models)."""
    from kgrag_utils.methods.kgp import KGP, summarize
    from kgrag_utils.provenance import per_question
    from kgrag_utils.records import RunRecorder

    kgp = KGP.prepare(cfg, ds, llm=llm, embedder=embedder)
    rec = None
    rows: list[dict] = []
    wanted = {q.qid for q in ds.items}
    if run_name and only_done:  # read what a (possibly running) run has written; touch nothing
        rows = [r for r in _read_examples(run_name) if r.get("id") in wanted]
    elif run_name:
        # the run's parameters: the config's knobs (not its split, which this script does not record) and the sample
        fixed = {"split", "demos", "shots"} if cfg.demos == "fixed" else {"split"}  # fixed (default): earlier keys hold
        fixed |= {"demo_pool"} if cfg.demo_pool == "train" else set()
        params = {**{k: v for k, v in cfg.to_dict().items() if k not in fixed}, "dataset": ds.name, "limit": limit_desc,
                  **(evaluation or {})}  # split and dataset options: another question file is another run
        rec = RunRecorder("kgp", params, run_name=run_name)
        rows = [r for r in rec.examples if r.get("id") in wanted]
    done = {r["id"] for r in rows}
    t0 = time.perf_counter()
    todo = [] if only_done else [q for q in ds.items if q.qid not in done]
    if todo:  # the protocol's run: one record per question, each added to the run record as it finishes
        rows += kgp.run(todo, recorder=rec, progress=progress)
    wall = time.perf_counter() - t0
    summary = summarize(rows)
    entry = {"graph": cfg.graph if cfg.uses_graph else None, "traversal": cfg.traversal, "mode": cfg.mode,
             "similarity": cfg.similarity, "budget": cfg.budget, "branching": cfg.branching,
             "n_seeds": cfg.seeds_count, "structural": cfg.structural, "reader": cfg.reader,
             "choices": cfg.describe_choices(), "summary": summary, "wall_seconds_this_call": wall,
             "n_resumed": len(done), "n_done": len(rows), "complete": len(rows) == len(ds.items),
             "config": cfg.to_dict(),
             "_outcomes": per_question(rows, [f"recall@{k}" for k in cfg.ks] + (["em", "f1"] if cfg.reader else []))}
    if cfg.uses_llm_traversal or cfg.reader:
        entry["llm"] = kgp.loaded_llm.describe() if kgp.loaded_llm is not None else {"preset": cfg.llm_preset}
        entry["llm_stats"] = kgp.loaded_llm.stats if kgp.loaded_llm is not None else None
        toks = [r.get("tokens", {}) for r in rows]
        entry["tokens_mean"] = {k: sum(t.get(k, 0) for t in toks) / max(len(rows), 1)
                                for k in ("agent_prompt", "agent_completion", "reader_prompt", "reader_completion")}
        entry["evidence_failed_rate"] = _rate([h.get("evidence_failed") for r in rows for h in r.get("hops", [])])
        if cfg.reader:
            entry["reader_failed"] = sum(1 for r in rows if r.get("reader_failed"))
    if rec is not None and not only_done:
        rec.finish(summary=summary, extra={"benchmark": "kgp_retrieval"})
        entry["run_name"] = rec.run_name
    elif run_name:
        entry["run_name"] = run_name
    return entry, kgp


def _set_batch_threads(llm, n: int) -> bool:
    """Also use `n` threads for prompt processing (llama-cpp-python defaults it to every CPU, which
    spins badly on a shared machine: measured here, 1 thread prefilled about twice as fast under load)."""
    try:
        import llama_cpp

        llama_cpp.llama_set_n_threads(llm.llama._ctx.ctx, int(n), int(n))
        return True
    except Exception:  # noqa: BLE001 - another backend, or another llama-cpp-python layout: keep its default
        return False


def _read_examples(run_name: str | list[str]) -> list[dict]:
    from kgrag_utils import settings

    names = [run_name] if isinstance(run_name, str) else list(run_name)
    rows = []
    for name in names:
        path = settings.results_dir(create=False) / name / "examples.jsonl"
        if not path.exists():
            continue
        for line in path.read_text(encoding="utf-8").splitlines():
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError:  # a line being written right now
                continue
    seen = {}
    for r in rows:
        seen[r.get("id")] = r
    return list(seen.values())


def _path(p: str | Path) -> Path:
    """A benchmark path as every benchmark reads it: a relative one resolves from the repository root."""
    from kgrag_utils import settings

    p = Path(p)
    return p if p.is_absolute() else settings.repo_root() / p


def _rate(flags) -> float | None:
    flags = [bool(f) for f in flags if f is not None]
    return sum(flags) / len(flags) if flags else None


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_dataset_arguments(ap, kinds=("passages",), default="musique", split="all")  # + --option questions=FILE
    ap.add_argument("--graph", default="entity", help="comma list of tfidf,knn,entity,union")
    ap.add_argument("--traversal", default="nollm", help="comma list of llm,nollm,nograph,tfidf,knn")
    ap.add_argument("--budget", type=int, default=30)
    ap.add_argument("--branching", type=int, default=3)
    ap.add_argument("--limit", type=int, default=None)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--llm", default=None, help="LLM preset (default: the config's, the packaged CPU model)")
    ap.add_argument("--llm-backend", default="")
    ap.add_argument("--structured", default="", choices=("", "off", "schema"),
                    help="decoding mode (recorded): off = free text, schema = the reader's JSON schema; '' = the preset's")
    ap.add_argument("--llm-threads", type=int, default=0,
                    help="llama.cpp threads (0 = backend default); 1 is faster on a heavily shared CPU")
    ap.add_argument("--reader", action="store_true", help="also run the reader (EM/F1); needs the LLM")
    ap.add_argument("--set-passages", type=int, default=None)
    ap.add_argument("--whole-corpus", action="store_true")
    ap.add_argument("--similarity", default=None, choices=["tfidf", "embedding"])
    ap.add_argument("--mode", default=None, choices=["multi", "onehop"])
    ap.add_argument("--structural", action="store_true")
    ap.add_argument("--demos", default="fixed", choices=("fixed", "nearest"),
                    help="agent prompt: fixed (no example) or the nearest training questions (refused without a training split)")
    ap.add_argument("--shots", type=int, default=2, help="--demos nearest: training questions shown")
    ap.add_argument("--demo-pool", default="train", choices=DEMO_POOLS,
                    help="--demos nearest: from the training split, or from the other fold of the evaluated questions "
                         "(crossfit: for a data copy without a training split; labelled, not a training-split number)")
    ap.add_argument("--sweep", default=None, choices=["density", "branching"])
    ap.add_argument("--sweep-graphs", default="tfidf,knn,entity", help="constructors of the density sweep")
    ap.add_argument("--sweep-traversal", default="nollm", help="traversal used inside a sweep (nollm or llm)")
    ap.add_argument("--run-name", default=None, help="record per-example rows with RunRecorder (resumable)")
    ap.add_argument("--shard", default=None,
                    help="i/n: run only questions i, i+n, i+2n, ... (run name gets -shard<i>of<n>); parallel LLM runs")
    ap.add_argument("--only-done", action="store_true",
                    help="with --run-name: summarise the records already written, run nothing new (partial results)")
    ap.add_argument("--figures", action="store_true", help="draw the sweep figure into figures/")
    ap.add_argument("--plot-from", default=None, help="comma list of sweep JSON files: only draw the combined figures")
    ap.add_argument("--merge", default=None,
                    help="comma list of the shard JSONs of one --shard run: write one JSON pooled from their records")
    ap.add_argument("--reread", default=None,
                    help="a merged LLM JSON: rerun only the reader (current prompt) on its recorded passage lists")
    ap.add_argument("--out", default=None)
    ap.add_argument("--no-progress", action="store_true")
    args = ap.parse_args(argv)
    if args.plot_from:
        return plot_files(_csv(args.plot_from))
    if not args.out:
        ap.error("--out is required (or --plot-from)")
    if args.merge:
        return merge_shards(_csv(args.merge), args.out)
    if args.reread:
        if not args.run_name:
            ap.error("--reread needs --run-name (the reader's records resume from it)")
        return reread(args.reread, args.out, args.run_name, args.llm_threads, not args.no_progress, args.structured)

    from kgrag_utils.datasets import load_dataset
    from kgrag_utils.methods.kgp import KGPConfig
    from kgrag_utils.methods.kgp.stages import sweeps

    ds = dataset_from_args(args, limit=args.limit, seed=args.seed)
    shard = None
    if args.shard:
        i, n = (int(x) for x in args.shard.split("/"))
        if not 0 <= i < n:
            ap.error("--shard i/n needs 0 <= i < n")
        shard = (i, n)
        if not args.only_done:
            ds.items = ds.items[i::n]
    # what this run evaluates goes into its config, so that the record says it (not the config's defaults)
    base = KGPConfig(dataset=args.dataset, split=args.split, limit=args.limit or 0, seed=args.seed,
                     budget=args.budget, branching=args.branching, reader=args.reader, traversal=_csv(args.traversal)[0],
                     graph=_csv(args.graph)[0])
    overrides = {}
    if args.llm:
        overrides["llm_preset"] = args.llm
    if args.llm_backend:
        overrides["llm_backend"] = args.llm_backend
    if args.structured:
        overrides["llm_structured"] = args.structured
    if args.set_passages is not None:
        overrides["set_passages"] = args.set_passages
    if args.whole_corpus:
        overrides["whole_corpus"] = True
    if args.similarity:
        overrides["similarity"] = args.similarity
    if args.mode:
        overrides["mode"] = args.mode
    if args.structural:
        overrides["structural"] = True
    if args.demos != "fixed":
        overrides.update(demos=args.demos, shots=args.shots, demo_pool=args.demo_pool)
    base = base.replace(**overrides)
    out: dict = {"benchmark": "kgp_retrieval", "dataset": args.dataset, "split": args.split,
                 "dataset_options": check_dataset_arguments(args),
                 "n_questions": len(ds.items), "shard": args.shard, "limit": args.limit, "seed": args.seed,
                 "config": base.to_dict(), "config_note": "shared by every entry of results; each entry's own "
                 "config (its graph and traversal) is under results[i].config", "environment": _environment(),
                 "command": " ".join(sys.argv)}
    progress = not args.no_progress
    from kgrag_utils.methods.kgp import KGP

    if args.sweep:
        cfg = base.replace(traversal=args.sweep_traversal, reader=False, graph=_csv(args.graph)[0])
        out["config"] = cfg.to_dict()  # what the sweep ran (each row adds its own constructor and knob)
        kgp = KGP.prepare(cfg, ds)
        t0 = time.perf_counter()
        if args.sweep == "density":
            rows = []
            for g in _csv(args.sweep_graphs):
                rows += sweeps.density_sweep(kgp, ds.items, g, progress=progress)
            out["density_sweep"] = rows
        else:
            out["branching_sweep"] = sweeps.branching_sweep(kgp, ds.items, progress=progress)
        out["sweep_seconds"] = time.perf_counter() - t0
        if args.figures:
            _figures(out, args.dataset)
    else:
        results = []
        llm = embedder = None
        if args.llm_threads and not args.only_done and (args.reader or any(t in ("llm", "nograph") for t in _csv(args.traversal))):
            from kgrag_utils.llm import load_llm

            llm = load_llm(base.llm_preset, backend=base.llm_backend or None, n_threads=args.llm_threads,
                           structured=base.llm_structured or None)
            out["llm_threads"] = args.llm_threads
            out["llm_threads_batch_set"] = _set_batch_threads(llm, args.llm_threads)
        for traversal in _csv(args.traversal):
            graphs = _csv(args.graph) if traversal in ("llm", "nollm") else ["none"]
            for g in graphs:
                cfg = base.replace(graph=g if g != "none" else base.graph, traversal=traversal)
                run_name = None
                if args.run_name:
                    run_name = args.run_name if len(graphs) * len(_csv(args.traversal)) == 1 else f"{args.run_name}-{g}-{traversal}"
                    if shard and not args.only_done:
                        run_name = f"{run_name}-shard{shard[0]}of{shard[1]}"
                    elif shard:  # --only-done with --shard i/n: read every shard's records
                        run_name = [f"{run_name}-shard{k}of{shard[1]}" for k in range(shard[1])]
                entry, kgp = run_variant(ds, cfg, str(args.limit), run_name, progress, llm=llm, embedder=embedder,
                                         only_done=args.only_done,
                                         evaluation=evaluation_params_from_args(args, default_split="all"))
                llm, embedder = kgp.loaded_llm, kgp.loaded_embedder
                results.append(entry)
                print(json.dumps({k: entry[k] for k in ("graph", "traversal")}),
                      {k: round(v, 3) for k, v in entry["summary"].items() if isinstance(v, float) and ("@5" in k or "@30" in k or k in ("em", "f1", "mean_graph_density"))},
                      flush=True)
        out["results"] = results
        out["outcomes"] = {f"{e['graph'] or 'none'}/{e['traversal']}": e.pop("_outcomes") for e in results}
    from kgrag_utils.records import write_result

    path = write_result(_path(args.out), out, args)
    print(f"wrote {path}")
    return out


def _restore_nan(rows: list[dict], keys: list[str]) -> list[dict]:
    """Records store a metric without gold (nan) as null; read back, that is nan again (not a 0)."""
    out = []
    for r in rows:
        if not r.get("failed") and any(k in r and r[k] is None for k in keys):
            r = {**r, **{k: float("nan") for k in keys if k in r and r[k] is None}}
        out.append(r)
    return out


def merge_shards(paths: list[str], out_path: str) -> dict:
    """One benchmark JSON for a sharded run, pooled from the shards' per-question records.

    Checks: the shards share dataset, split, seed, limit and configuration; their indices are
    0..n-1 once each; every entry is complete; the records' question ids are disjoint and together
    the ids of `load_dataset(dataset, split, limit, seed)`. Every metric is recomputed over all
    records (`summarize`); `check_vs_shard_means` is the largest gap between that and the
    size-weighted mean of the shards' own summaries (0 up to rounding: all metrics are means).
    """
    from kgrag_utils.datasets import load_dataset
    from kgrag_utils.errors import IntegrityError
    from kgrag_utils.methods.kgp.stages.evaluation import metric_keys
    from kgrag_utils.methods.kgp import summarize
    from kgrag_utils.records import write_result

    shards = [json.loads(_path(p).read_text(encoding="utf-8")) for p in paths]
    first = shards[0]
    for key in ("dataset", "split", "seed", "limit", "config", "dataset_options"):
        if any(s.get(key) != first.get(key) for s in shards):
            raise IntegrityError(f"the shards differ in {key!r}: merge only the shard files of one run.")
    try:
        index = sorted(tuple(int(x) for x in str(s["shard"]).split("/")) for s in shards)
    except (KeyError, ValueError):
        raise IntegrityError("a file to merge is not a shard (no 'shard': 'i/n'): pass the --shard runs' JSONs.") from None
    n_shards = index[0][1]
    if index != [(i, n_shards) for i in range(n_shards)]:
        raise IntegrityError(f"shards {[f'{i}/{n}' for i, n in index]} are not 0..{n_shards - 1} of {n_shards} once each: pass all of them.")
    shards = sorted(shards, key=lambda s: int(str(s["shard"]).split("/")[0]))
    n_entries = {len(s.get("results", [])) for s in shards}
    if len(n_entries) != 1:
        raise IntegrityError("the shards hold different numbers of (graph, traversal) entries: merge one run's shards.")
    expected = [q.qid for q in load_dataset(first["dataset"], split=first["split"], limit=first["limit"],
                                            seed=first["seed"], **first.get("dataset_options", {})).items]
    results = []
    for j in range(n_entries.pop()):
        parts = [s["results"][j] for s in shards]
        if len({(p["graph"], p["traversal"]) for p in parts}) != 1:
            raise IntegrityError(f"entry {j} is a different (graph, traversal) in different shards.")
        base = parts[0]
        ks = [int(k) for k in first["config"]["ks"]]
        keys = metric_keys(ks, base["reader"])
        rows, seen = [], set()
        for s, p in zip(shards, parts):
            if not p.get("complete") or not p.get("run_name"):
                raise IntegrityError(f"shard {s['shard']} entry {j} is incomplete or has no run name: finish it (rerun resumes) first.")
            got = _read_examples(p["run_name"])
            if len(got) != p["n_done"]:
                raise IntegrityError(f"results/{p['run_name']} holds {len(got)} records, its shard JSON {p['n_done']}: rerun that shard.")
            ids = {r["id"] for r in got}
            if ids & seen:
                raise IntegrityError(f"results/{p['run_name']} repeats questions of another shard.")
            seen |= ids
            rows += got
        if seen != set(expected):
            raise IntegrityError(f"the shards' records cover {len(seen)} questions, not the {len(expected)} of limit={first['limit']}.")
        order = {qid: i for i, qid in enumerate(expected)}
        rows = _restore_nan(sorted(rows, key=lambda r: order[r["id"]]), keys)
        summary = summarize(rows)
        n_total = sum(p["summary"]["n"] for p in parts)
        gap = max((abs(summary[k] - sum(p["summary"][k] * p["summary"]["n"] for p in parts) / n_total)
                   for k in keys if all(isinstance(p["summary"].get(k), (int, float)) for p in parts)
                   and isinstance(summary.get(k), float) and summary[k] == summary[k]), default=0.0)
        entry = {k: v for k, v in base.items() if k not in ("summary", "run_name", "n_resumed", "llm_stats",
                                                            "wall_seconds_this_call", "tokens_mean")}
        entry.update({"summary": summary, "n_done": len(rows), "complete": len(rows) == len(expected),
                      "pooled_from": "per-question records of every shard (not an average of shard averages)",
                      "check_vs_shard_means": gap,
                      "shards": [{"shard": s["shard"], "run_name": p["run_name"], "n": p["summary"]["n"],
                                  "wall_seconds": p.get("wall_seconds_this_call")} for s, p in zip(shards, parts)],
                      "wall_seconds_sum_of_shards": sum(p.get("wall_seconds_this_call") or 0.0 for p in parts)})
        if "llm_stats" in base:
            stats = [p.get("llm_stats") or {} for p in parts]
            entry["llm_stats"] = {k: sum(s.get(k, 0) for s in stats) for k in stats[0]}
            toks = [r.get("tokens", {}) for r in rows]
            entry["tokens_mean"] = {k: sum(t.get(k, 0) for t in toks) / max(len(rows), 1)
                                    for k in ("agent_prompt", "agent_completion", "reader_prompt", "reader_completion")}
            entry["evidence_failed_rate"] = _rate([h.get("evidence_failed") for r in rows for h in r.get("hops", [])])
        if base["reader"]:
            entry["reader_failed"] = sum(1 for r in rows if r.get("reader_failed"))
        results.append(entry)
    out = {"benchmark": "kgp_retrieval", "dataset": first["dataset"], "split": first["split"],
           "dataset_options": first.get("dataset_options", {}),
           "n_questions": len(expected), "shard": None, "limit": first["limit"], "seed": first["seed"],
           "config": first["config"], "environment": first.get("environment"),
           "merged_from": [str(p) for p in paths], "shard_commands": [s.get("command") for s in shards],
           "command": " ".join(sys.argv), "results": results}
    for key in ("llm_threads", "llm_threads_batch_set"):
        if key in first:
            out[key] = first[key]
    path = write_result(_path(out_path), out)
    print(f"wrote {path}")
    return out


def reread(merged_path: str, out_path: str, run_name: str, llm_threads: int = 0, progress: bool = True,
           structured: str = "") -> dict:
    """The reader alone, with the current reader prompt, over the passage lists an LLM-traversal run
    recorded (the traversal is not rerun: its records are read from the shards named in the merged
    JSON). Each question's document set is rebuilt (it is seeded by the question id) and must hold
    every recorded passage. Records go through RunRecorder (resumable); the summary holds the new
    EM / F1 / containment over every question and the recorded ones beside them."""
    from kgrag_utils.progress import progress_bar
    from kgrag_utils.datasets import load_dataset
    from kgrag_utils.errors import IntegrityError
    from kgrag_utils.methods.kgp import KGP, KGPConfig
    from kgrag_utils.methods.kgp.stages.evaluation import metric_keys
    from kgrag_utils.methods.kgp.stages.evaluation import answer_metrics
    from kgrag_utils.methods.kgp.prompts import reader_instruction
    from kgrag_utils.records import RunRecorder, write_result
    from kgrag_utils import metrics

    merged = json.loads(_path(merged_path).read_text(encoding="utf-8"))
    entry = merged["results"][0]
    cfg = KGPConfig.from_params({**merged["config"], "ks": tuple(merged["config"]["ks"])})
    if structured:
        cfg = cfg.replace(llm_structured=structured)
    ds = load_dataset(merged["dataset"], split=merged["split"], limit=merged["limit"], seed=merged["seed"],
                      **merged.get("dataset_options", {}))
    names = [s["run_name"] for s in entry.get("shards", [])] or [entry["run_name"]]
    recorded = {r["id"]: r for r in _read_examples(names)}
    missing = [q.qid for q in ds.items if q.qid not in recorded]
    if missing:
        raise IntegrityError(f"{len(missing)} questions have no traversal record in results/{names}: merge a complete run first.")
    rec = RunRecorder("kgp", {"reread_of": names, "dataset": ds.name, "limit": merged["limit"], **cfg.to_dict()},
                      run_name=run_name)
    todo = [q for q in ds.items if q.qid not in rec.done_ids]
    llm = None
    if llm_threads and todo:  # nothing left to read: no model is loaded (no LLM lock needed)
        from kgrag_utils.llm import load_llm

        llm = load_llm(cfg.llm_preset, backend=cfg.llm_backend or None, n_threads=llm_threads,
                       structured=cfg.llm_structured or None)
        _set_batch_threads(llm, llm_threads)
    kgp = KGP.prepare(cfg, ds, llm=llm)
    t0 = time.perf_counter()
    for q in progress_bar(todo, desc="reader", enabled=progress):
        old = recorded[q.qid]
        row = {"id": q.qid, "question": q.question, "answers": list(q.answers), "failed": False,
               "answer_v1": old.get("answer"), "em_v1": old.get("em"), "f1_v1": old.get("f1"),
               "instruction": reader_instruction(q.question)}
        try:
            if old.get("failed"):
                raise RuntimeError(f"the traversal record failed: {old.get('error')}")
            dset = kgp.prepare_question(q).dset
            where = {pid: i for i, pid in enumerate(dset.pids)}
            if any(pid not in where for pid in old["retrieved"]):
                raise IntegrityError("the rebuilt document set lacks a recorded passage (set rule or corpus changed).")
            t1 = time.perf_counter()
            read = kgp.read(q, dset, [where[pid] for pid in old["retrieved"]])
            read["reader_seconds_wall"] = time.perf_counter() - t1
            row.update(read)
            row.update(answer_metrics(read["answer"], q.answers))
        except Exception as exc:  # noqa: BLE001 - recorded, counted as wrong
            row.update({"failed": True, "error": f"{type(exc).__name__}: {exc}"})
        rec.add(row)
    rows = [r for r in rec.examples if r["id"] in {q.qid for q in ds.items}]
    retrieval_keys = [k for k in metric_keys(cfg.ks, reader=False)]
    joined = _restore_nan([{**{k: recorded[r["id"]].get(k) for k in retrieval_keys}, **r} for r in rows], retrieval_keys)
    summary = metrics.summarize(joined, retrieval_keys + ["em", "f1", "containment"])
    summary.update({f"{k}_v1": float(sum(r.get(f"{k}_v1") or 0.0 for r in rows) / max(len(rows), 1)) for k in ("em", "f1")})
    yes_no = [r for r in rows if str(r.get("answer", "")).strip().lower() in ("yes", "no")]
    summary["yes_no_answers"] = len(yes_no)
    summary["yes_no_answers_v1"] = sum(1 for r in rows if str(r.get("answer_v1") or "").strip().lower() in ("yes", "no"))
    rec.finish(summary=summary, extra={"benchmark": "kgp_retrieval", "reread_of": names})
    path = _path(out_path)
    previous = json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}
    previous = previous if previous.get("run_name") == rec.run_name else {}  # an earlier call of this resumed run
    out = {"benchmark": "kgp_retrieval", "mode": "reread", "dataset": merged["dataset"], "split": merged["split"],
           "dataset_options": merged.get("dataset_options", {}),
           "n_questions": len(ds.items), "limit": merged["limit"], "seed": merged["seed"], "config": cfg.to_dict(),
           "reread_of": merged_path, "traversal_runs": names, "run_name": rec.run_name,
           "llm": kgp.loaded_llm.describe() if kgp.loaded_llm is not None else previous.get("llm", {"preset": cfg.llm_preset}),
           "llm_stats": kgp.loaded_llm.stats if kgp.loaded_llm is not None else previous.get("llm_stats"),
           "wall_seconds_this_call": time.perf_counter() - t0, "environment": _environment(),
           "earlier_call": {k: previous.get(k) for k in ("command", "wall_seconds_this_call")} if previous else None,
           "command": " ".join(sys.argv), "summary": summary,
           "retrieval_summary": {k: v for k, v in entry["summary"].items() if "@" in k}}
    write_result(path, out)
    print(f"wrote {path}", {k: summary[k] for k in ("n", "n_failed", "em", "f1", "em_v1", "f1_v1", "yes_no_answers")})
    return out


def plot_files(paths: list[str]) -> dict:
    """Combined sweep figures from saved sweep JSONs: kgp_density_recall and kgp_branching_recall."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from kgrag_utils import plotting
    from kgrag_utils.methods.kgp import figures as plots

    plotting.set_theme()
    loaded = [json.loads(_path(p).read_text(encoding="utf-8")) for p in paths]
    density = [d for d in loaded if "density_sweep" in d]
    branching = {d["dataset"]: d["branching_sweep"] for d in loaded if "branching_sweep" in d}
    written = {}
    if density:
        fig, axes = plt.subplots(1, len(density), figsize=(7 * len(density), 4.8), squeeze=False)
        for ax, d in zip(axes[0], density):
            plots.plot_density_sweep(d["density_sweep"], ax=ax, dataset=f"({d['dataset']}, n={d['n_questions']})")
        fig.tight_layout()
        written["density"] = [str(p) for p in plotting.save_figure(fig, "kgp_density_recall")]
    if branching:
        fig, ax = plt.subplots(figsize=(6.5, 4.2))
        plots.plot_branching_sweep(branching, ax=ax)
        written["branching"] = [str(p) for p in plotting.save_figure(fig, "kgp_branching_recall")]
    plt.close("all")
    print(written)
    return written


def _figures(out: dict, dataset: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from kgrag_utils import plotting
    from kgrag_utils.methods.kgp import figures as plots

    plotting.set_theme()
    if "density_sweep" in out:
        fig, ax = plt.subplots(figsize=(7, 4.5))
        plots.plot_density_sweep(out["density_sweep"], ax=ax, dataset=f"({dataset})")
        plotting.save_figure(fig, f"kgp_density_recall_{dataset}")
    if "branching_sweep" in out:
        fig, ax = plt.subplots(figsize=(6, 4))
        plots.plot_branching_sweep({dataset: out["branching_sweep"]}, ax=ax)
        plotting.save_figure(fig, f"kgp_branching_recall_{dataset}")
    plt.close("all")


if __name__ == "__main__":
    main()
