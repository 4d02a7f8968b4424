"""CPU throughput idle and beside a competing job, the old thread default against the new one, in one run.

    python benchmarks/cpu_threads.py --modes old,new,passive --llm-tokens 64 --repeats 2 --names 3000
    python benchmarks/cpu_threads.py --llm-tokens 16 --repeats 1 --names 256 --out /tmp/cpu_threads.json  # a dry run

LLM decode tokens/s (the packaged 0.5B on llama.cpp) and embedding names/s (MiniLM, MetaQA's names), each in a fresh
process (OpenMP reads its variables when the libraries load), idle and beside `--competitor-threads` spinning
processes, per mode: `old` (every core, OpenMP's spinning wait), `new` (kgrag_utils/threads.py's choice), `passive`
(every core, OMP_WAIT_POLICY=PASSIVE). Results and the issue's 60% target: docs/CPU.md.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

from bench_common import default_kb, entity_names, json_child, load, machine, write

LLM_PROMPT = "Write the numbers from 1 to 300 separated by commas: 1, 2, 3,"
SPIN = "import time\nend = time.time() + {seconds}\nwhile time.time() < end: pass\n"
SETTLE_S, TIMEOUT_S, BATCH_SIZE = 3.0, 900.0, 64  # competitor head start, limit per measurement, embedding batch
# Variables the worker starts without, so every mode begins from the same environment.
STRIPPED = ("KGRAG_THREADS", "KGRAG_LLM_THREADS", "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
            "NUMEXPR_NUM_THREADS", "OMP_WAIT_POLICY")
METRIC = {"llm": "tokens_per_s", "embed": "names_per_s"}


def _worker(args) -> dict:
    """One measurement in this (fresh) process, under one mode's thread settings."""
    before = dict(os.environ)
    import kgrag_utils  # noqa: F401  (sets the OpenMP/BLAS variables of the new default)
    from kgrag_utils import threads

    if args.mode in ("old", "passive"):
        for var in STRIPPED:  # undo the new default before torch or llama.cpp load
            if var not in before:
                os.environ.pop(var, None)
        os.environ[threads.THREADS_ENV] = str(args.old_threads)
        if args.mode == "passive":  # every core, but OpenMP threads sleep at a barrier instead of spinning
            os.environ["OMP_WAIT_POLICY"] = "PASSIVE"
        threads.budget.cache_clear()
    b = threads.budget()
    out = {"mode": args.mode, "threads": b.threads, "line": b.line(), "omp_wait_policy": os.environ.get("OMP_WAIT_POLICY")}
    return {**out, **(_measure_llm(args) if args.worker == "llm" else _measure_embed(args))}


def _measure_llm(args) -> dict:
    from kgrag_utils.llm import load_llm

    llm = load_llm(args.preset, backend="llamacpp", cache=False)
    llama = llm.llama
    stops = {llama.token_eos(), *llama.tokenize(b"<|im_end|><|endoftext|>", add_bos=False, special=True)}
    no_stop = {t: -1e9 for t in stops}
    llama.create_completion(LLM_PROMPT, max_tokens=4, temperature=0.0, logit_bias=no_stop)  # warm-up
    tokens, seconds, cpu0 = 0, 0.0, time.process_time()
    for _ in range(args.repeats):
        llama.reset()  # no prefix reuse between repeats: every repeat prefills the prompt again
        t0 = time.perf_counter()
        resp = llama.create_completion(LLM_PROMPT, max_tokens=args.llm_tokens, temperature=0.0, logit_bias=no_stop)
        seconds += time.perf_counter() - t0
        tokens += int(resp["usage"]["completion_tokens"])
    cpu = time.process_time() - cpu0
    llm.close()
    return {"tokens": tokens, "seconds": round(seconds, 3), "tokens_per_s": round(tokens / seconds, 2),
            "cpu_cores_used": round(cpu / seconds, 2), "llm_threads": llm.n_threads}


def _measure_embed(args) -> dict:
    import torch

    from kgrag_utils.embeddings import load_embedder

    names = entity_names(default_kb(), args.names)
    emb = load_embedder("minilm", cache=False, batch_size=BATCH_SIZE)
    emb.encode(names[:64], progress=False)  # loads the model
    cpu0, t0 = time.process_time(), time.perf_counter()
    emb.encode(names, progress=False)
    seconds = time.perf_counter() - t0
    return {"names": len(names), "seconds": round(seconds, 3), "names_per_s": round(len(names) / seconds, 1),
            "cpu_cores_used": round((time.process_time() - cpu0) / seconds, 2), "torch_threads": torch.get_num_threads()}


def _run_worker(args, what: str, mode: str) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in STRIPPED}
    cmd = [sys.executable, __file__, "--worker", what, "--mode", mode, "--old-threads", str(args.old_threads),
           "--preset", args.preset, "--llm-tokens", str(args.llm_tokens), "--repeats", str(args.repeats),
           "--names", str(args.names)]
    load_before = load()
    try:
        result = json_child(cmd, env=env, timeout=TIMEOUT_S)
    except RuntimeError as exc:
        raise SystemExit(f"worker {what}/{mode} failed: {exc}") from exc
    return {**result, "load_before": load_before, "load_after": load()}


def run_all(args) -> dict:
    """Every idle measurement first, then each beside the competitor: a competitor's processes may take a moment
    to leave, and the load averages recorded beside each measurement stay high for minutes."""
    results: dict[str, dict] = {}
    pairs = [(what, mode) for what in args.what.split(",") for mode in args.modes.split(",")]
    for what, mode in pairs:
        results[f"{what}/{mode}/idle"] = _run_worker(args, what, mode)
    for what, mode in pairs:
        comp = [subprocess.Popen([sys.executable, "-c", SPIN.format(seconds=TIMEOUT_S)])
                for _ in range(args.competitor_threads)]
        try:
            time.sleep(SETTLE_S)
            results[f"{what}/{mode}/busy"] = _run_worker(args, what, mode)
        finally:
            for p in comp:
                p.terminate()
                p.wait(timeout=30)
    return results


def shares(results: dict) -> dict:
    """busy / own idle throughput, busy / the best idle throughput of the modes (a default that idles at fewer
    threads than the machine allows would look good by the first alone), and throughput per CPU core received."""
    own, best, per_core = {}, {}, {}
    for key, r in results.items():
        what, mode, cond = key.split("/")
        metric = METRIC[what]
        if r.get(metric) and r.get("cpu_cores_used"):
            per_core[key] = round(r[metric] / r["cpu_cores_used"], 1)
        if cond == "busy":
            idle = {m: results.get(f"{what}/{m}/idle", {}).get(metric) or 0 for m in ("old", "new", "passive")}
            own[f"{what}/{mode}"] = round(r[metric] / idle[mode], 3) if idle[mode] else None
            best[f"{what}/{mode}"] = round(r[metric] / max(idle.values()), 3) if max(idle.values()) else None
    return {"kept_share_busy_over_idle": own, "kept_share_of_best_idle": best, "rate_per_core_used": per_core}


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--what", default="llm,embed", help="comma list of llm, embed")
    p.add_argument("--modes", default="old,new", help="comma list of old, new, passive (see the module docstring)")
    p.add_argument("--preset", default="qwen2.5-coder-0.5b")
    p.add_argument("--llm-tokens", type=int, default=128, help="new tokens per LLM repeat")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--names", type=int, default=4000, help="entity names embedded per measurement")
    p.add_argument("--old-threads", type=int, default=os.cpu_count() or 1, help="the old default (every core)")
    p.add_argument("--competitor-threads", type=int, default=2)
    p.add_argument("--out", default="benchmarks/results/cpu_threads.json")
    p.add_argument("--worker", choices=tuple(METRIC), help=argparse.SUPPRESS)
    p.add_argument("--mode", choices=("old", "new", "passive"), help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.worker:
        print(json.dumps(_worker(args)))
        return
    start = load()
    results = run_all(args)
    record = {"benchmark": "cpu_threads", "machine": machine(load_start=start, load_end=load()),
              "conditions": {"competitor_threads": args.competitor_threads, "old_threads": args.old_threads,
                             "preset": args.preset}, "results": results, **shares(results)}
    write(args.out, record, args)
    print(json.dumps({k: record[k] for k in ("kept_share_busy_over_idle", "kept_share_of_best_idle")}))


if __name__ == "__main__":
    main()
