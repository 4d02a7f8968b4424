"""The GPU check: execute every CUDA code path once and measure an 8B-shaped model, in one JSON (docs/GPU.md).

    python benchmarks/gpu_check.py                 # on the GPU machine -> benchmarks/results/gpu_check.json
    python benchmarks/gpu_check.py --dry-run       # here, on the CPU, tiny shapes -> benchmarks/out/gpu_check_dry_run.json
    python benchmarks/gpu_check.py --parts method,throughput --budget-s 240   # rerun some parts only

Parts, each in its own process (a crash or CUDA error in one is recorded, the others run; each writes its results
as it goes, so a part stopped at its time limit keeps what it measured): `tests` (`pytest -m cuda
tests/test_cuda.py`), `method` (SimGRAG on `sample-movies-2hop` with a tiny random 4-bit LLM and embedder, through
the runner when papermill and ipykernel are importable, else the method's `run`; every unparseable reply must be a
failed question; plus how often batched and one-at-a-time greedy 4-bit replies agree, a measurement) and
`throughput` (benchmarks/gpu_throughput.py). `--dry-run` runs every part on the CPU with tiny shapes: its JSON
says `"dry_run": true` and it never writes benchmarks/results/gpu_check.json. One `--budget-s` bounds the whole
check; what did not fit is recorded as skipped.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import platform
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import traceback
import xml.etree.ElementTree as ET
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))  # its part modules beside it

from gpu_throughput import (DRY_THROUGHPUT, H200_BANDWIDTH_TBS, REAL_THROUGHPUT, Partial,  # noqa: E402
                            device_of, free, part_throughput, short)

from kgrag_utils.records import write_result  # noqa: E402

PARTS = ("tests", "method", "throughput")
REAL_OUT = "benchmarks/results/gpu_check.json"
DRY_OUT = "benchmarks/out/gpu_check_dry_run.json"
DEFAULT_BUDGET_S = 420  # the whole check, so it stays under 8 minutes with the offline wheel install
#: the longest a part may take on the GPU (seconds); the throughput part takes what is left. A dry run's
#: parts share its whole budget (a busy CPU machine is slow, and a dry run measures nothing).
PART_CAPS = {"tests": 150, "method": 150, "throughput": 10_000}
METHOD = dict(notebook="01_simgrag", dataset="sample-movies-2hop", limit=8, batch_size=8)
DRY_METHOD = dict(METHOD, limit=2, batch_size=2)  # a char-level tiny model reads ~3k-token prompts: slow on a CPU
PACKAGES = ("torch", "transformers", "accelerate", "bitsandbytes", "sentence-transformers", "tokenizers",
            "safetensors", "huggingface-hub", "numpy", "faiss-cpu", "faiss-gpu-cu12", "papermill", "nbformat",
            "ipykernel", "triton", "pytest")


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


# ============================================================================ machine / versions
def machine_info() -> dict:
    info: dict = {"python": platform.python_version(), "platform": platform.platform(), "cpu_count": os.cpu_count(),
                  "hostname_hash": None, "ram_gib": round(os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE") / 2**30, 1)}
    try:
        import torch

        info["torch_cuda"] = torch.version.cuda
        info["cuda_available"] = bool(torch.cuda.is_available())
        if torch.cuda.is_available():
            p = torch.cuda.get_device_properties(0)
            info["gpu"] = {"name": p.name, "memory_gib": round(p.total_memory / 2**30, 1),
                           "capability": f"{p.major}.{p.minor}", "multiprocessors": p.multi_processor_count,
                           "count": torch.cuda.device_count()}
    except Exception as exc:  # a broken torch is itself a finding
        info["torch_error"] = short(exc)
    smi = shutil.which("nvidia-smi")
    if smi:
        try:
            out = subprocess.run([smi, "--query-gpu=name,memory.total,driver_version,power.limit,clocks.max.memory",
                                  "--format=csv,noheader"], capture_output=True, text=True, timeout=20)
            info["nvidia_smi"] = out.stdout.strip() or out.stderr.strip()
        except (OSError, subprocess.SubprocessError) as exc:
            info["nvidia_smi"] = short(exc)
    info["c_compiler"] = shutil.which("gcc") or shutil.which("cc")  # torch.compile's Triton launcher needs one
    return info


def versions() -> dict:
    """The packages the parts use (the commit is in the result's provenance block)."""
    from importlib import metadata

    out = {}
    for name in PACKAGES:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = None
    return out


# ============================================================================ part: method
def part_method(dry: bool, work: Path, partial: Partial, deadline: float, method_via: str = "auto") -> None:
    import importlib.util

    from kgrag_utils import random_models as rm
    from kgrag_utils.llm import load_llm

    device = device_of(dry)
    partial.set("device", device)
    t = time.perf_counter()
    tiny = rm.save_random_llama(work / "tiny-llm", rm.TINY_LLAMA, rm.char_tokenizer(), dtype="bfloat16", seed=1)
    emb = rm.save_tiny_bert_embedder(work / "tiny-embedder", seed=1)
    partial.step("build_tiny_models_s", round(time.perf_counter() - t, 2))

    # the tiny model quantized on load by the backend, then saved as a 4-bit folder for the notebook
    t = time.perf_counter()
    llm = load_llm(str(tiny), quantization="4bit", device=device, cache=False)
    import bitsandbytes as bnb

    partial.step("tiny_4bit", {"load_s": round(time.perf_counter() - t, 2),
                               "linear4bit_modules": sum(isinstance(m, bnb.nn.Linear4bit) for m in llm.model.modules()),
                               "device": str(next(llm.model.parameters()).device)})
    n_prompts, n_new = (4, 8) if dry else (16, 32)
    prompts = [f"Question {i}: which films did the director of film number {i * 7} also write?" + " context" * (i % 5)
               for i in range(n_prompts)]
    llm.batch_size = n_prompts
    batched = llm.generate(prompts, max_new_tokens=n_new)
    llm.batch_size = 1
    single = llm.generate(prompts, max_new_tokens=n_new)
    same = [b.text == s.text for b, s in zip(batched, single)]
    first_diff = [next((i for i, (x, y) in enumerate(zip(b.text, s.text)) if x != y), min(len(b.text), len(s.text)))
                  for b, s, ok in zip(batched, single, same) if not ok]
    partial.step("four_bit_batched_vs_single_agreement", {
        "what": "greedy replies of the tiny random 4-bit model, one left-padded batch vs one at a time; "
                "a measurement (bf16 kernels differ with the batch shape), the fp32 equality is a test",
        "n_prompts": n_prompts, "max_new_tokens": n_new, "identical": sum(same),
        "first_differing_character": first_diff})
    q4 = work / "tiny-llm-4bit"
    llm.model.save_pretrained(str(q4))
    llm.tokenizer.save_pretrained(str(q4))
    llm.close()
    del llm
    free(device)

    runner_ok = all(importlib.util.find_spec(m) is not None for m in ("papermill", "nbformat", "ipykernel"))
    via = {"runner": "runner", "run": "method.run"}.get(method_via) or ("runner" if runner_ok else "method.run")
    partial.set("via", via)
    spec = DRY_METHOD if dry else METHOD
    # LLM patterns (random replies: every pattern unparseable) and gold patterns (retrieval and the answer
    # stage run on the device, the answers are random): both must finish with the failures counted
    for source, suffix in (("llm", ""), ("oracle", "_oracle_patterns")):
        params = {"dataset": spec["dataset"], "limit": spec["limit"], "batch_size": spec["batch_size"],
                  "pattern_source": source}
        _method_run(via, spec, params, str(q4), str(emb), device, deadline, partial, suffix)


def _method_run(via, spec, params, q4, emb, device, deadline, partial, suffix) -> None:
    t = time.perf_counter()
    if via == "runner":
        from kgrag_utils.runner import run_notebook

        outcome = run_notebook(spec["notebook"], {**params, "llm_preset": q4, "llm_backend": "hf", "embedder": emb},
                               grid="gpu_check", timeout=max(30, int(deadline - time.time()) - 10))
        partial.step("run" + suffix, {"status": outcome.status, "error": outcome.error,
                                      "seconds": round(outcome.seconds, 1), "run_name": outcome.run_name})
        run_name = outcome.run_name
        if outcome.status != "ok":
            log = Path(outcome.log).read_text(errors="replace")[-3000:] if outcome.log else ""
            partial.step("run_log_tail" + suffix, log)
            # tell a notebook-only problem from a method problem: the same run without papermill
            t = time.perf_counter()
            try:
                direct = _run_simgrag_directly(q4, emb, params, device)
                partial.step("run_direct" + suffix, {"status": "ok", "seconds": round(time.perf_counter() - t, 1),
                                                     "records": _check_records(direct, spec["limit"])})
            except Exception as exc:
                partial.step("run_direct" + suffix, {"status": "failed", "error": short(exc),
                                                     "traceback": traceback.format_exc()[-2000:]})
    else:
        run_name = _run_simgrag_directly(q4, emb, params, device)
        partial.step("run" + suffix, {"status": "ok", "seconds": round(time.perf_counter() - t, 1), "run_name": run_name})
    try:
        partial.step("records" + suffix, _check_records(run_name, spec["limit"]))
    except Exception as exc:  # no run record at all
        partial.step("records" + suffix, {"ok": False, "error": short(exc)})


def _run_simgrag_directly(llm_folder: str, embedder: str, params: dict, device: str) -> str:
    """The notebook's evaluation cells without figures (when papermill or ipykernel is missing)."""
    from kgrag_utils.llm import load_llm
    from kgrag_utils.methods.simgrag import SimGRAG, SimGRAGConfig, summarize
    from kgrag_utils.records import RunRecorder

    config = SimGRAGConfig.from_params(params)
    data = config.load_dataset()
    recorder = RunRecorder("simgrag", {**config.to_dict(), "llm_preset": llm_folder, "embedder": embedder,
                                       "via": "gpu_check"})
    llm = load_llm(llm_folder, backend="hf", device=device)
    # the method protocol (docs/MIGRATION.md): prepare(config, dataset) embeds and indexes the KG, run returns
    # every item's record
    method = SimGRAG.prepare(config, data, llm=llm, embedder=embedder, progress=False)
    records = method.run(data.items, recorder=recorder, progress=False)
    summary = summarize(records)
    recorder.finish(summary=summary, timings=summary["timings"], tokens={**summary["tokens"], **llm.stats})
    llm.close()
    return recorder.run_dir.name


def _check_records(run_name: str, expected: int) -> dict:
    """Every question has a record; every unparseable reply is a failed question scored 0."""
    from kgrag_utils import settings
    from kgrag_utils.records import EXAMPLES_FILE, _read_jsonl, read_run

    rec = read_run(settings.results_dir() / run_name)
    path = settings.results_dir() / run_name / EXAMPLES_FILE
    examples = list(_read_jsonl(path)) if path.exists() else []
    bad_pattern = [e for e in examples if not e.get("pattern_ok")]
    bad_answer = [e for e in examples if e.get("pattern_ok") and e.get("answer_raw") is not None and not e.get("answers")]
    violations = [e["id"] for e in bad_pattern + bad_answer
                  if not e.get("failed") or e.get("hits@1") not in (0, 0.0)]
    summary = rec.get("summary") or {}
    llm_env = rec.get("environment") or {}
    return {
        "status": rec.get("status"), "n_records": len(examples), "expected": expected,
        "unparseable_patterns": len(bad_pattern), "unparseable_answers": len(bad_answer),
        "answers_generated": sum(e.get("answer_raw") is not None for e in examples),
        "failed": sum(bool(e.get("failed")) for e in examples),
        "failures_by_stage": {k: sum(e.get("failure") == k for e in examples) for k in ("pattern", "retrieval", "generation")},
        "unparseable_not_counted_as_failure": violations,
        "pattern_parse_rate": summary.get("pattern_parse_rate"),
        "hits@1": (summary.get("all") or {}).get("hits@1"),
        "llm_tokens": {k: v for k, v in (rec.get("tokens") or {}).items() if k in ("prompt_tokens", "completion_tokens", "calls")},
        "device_in_record": llm_env.get("device"), "gpu_in_record": llm_env.get("gpu"),
        "sample_raw_replies": [str(e.get("pattern_raw") or e.get("answer_raw"))[:60] for e in examples[:3]],
        "ok": rec.get("status") == "ok" and len(examples) == expected and not violations,
    }


# ============================================================================ part: tests
def run_tests_part(dry: bool, work: Path, env: dict, timeout: float, log) -> dict:
    junit = work / "junit.xml"
    cmd = [sys.executable, "-m", "pytest", "tests/test_cuda.py", "-m", "cuda", "-q", "-p", "no:cacheprovider",
           f"--junitxml={junit}", "-rA"]
    env = dict(env)
    if dry:
        env["KGRAG_CUDA_TESTS_ON_CPU"] = "1"
    rc, seconds, timed_out = _run_child(cmd, env, timeout, log)
    result: dict = {"command": " ".join(cmd[1:]), "exit_code": rc, "seconds": round(seconds, 1), "timed_out": timed_out,
                    "tests": []}
    if junit.exists():
        for case in ET.parse(junit).getroot().iter("testcase"):
            outcome, message = "passed", None
            for tag in ("failure", "error", "skipped"):
                node = case.find(tag)
                if node is not None:
                    outcome = {"failure": "failed"}.get(tag, tag)
                    message = (node.get("message") or node.text or "")[:600]
            result["tests"].append({"name": case.get("name"), "outcome": outcome, "seconds": float(case.get("time", 0)),
                                    "message": message})
    result["counts"] = counts = dict(collections.Counter(t["outcome"] for t in result["tests"]))
    result["status"] = ("ok" if rc == 0 and result["tests"] and counts.get("passed") == len(result["tests"])
                        else "timeout" if timed_out else "failed")
    return result


# ============================================================================ orchestration
_CHILDREN: list[subprocess.Popen] = []


def _stop_children(signum, frame) -> None:
    """The check itself is stopped: stop the running part (its own process group) and record the stop."""
    for proc in _CHILDREN:
        if proc.poll() is None:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
    raise SystemExit(f"gpu_check stopped by signal {signum}")


def _run_child(cmd: list[str], env: dict, timeout: float, log) -> tuple[int | None, float, bool]:
    t = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=str(ROOT), env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    _CHILDREN.append(proc)
    try:
        rc = proc.wait(timeout=max(1.0, timeout))
        return rc, time.perf_counter() - t, False
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGTERM)  # the part's own process group: its kernels and workers too
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        return None, time.perf_counter() - t, True


def _work_dir(dry: bool) -> Path:
    """/dev/shm when it can hold the 8B checkpoint (16 GB) with room to spare, else the temp folder."""
    need = 1 if dry else 40
    for base in ("/dev/shm", tempfile.gettempdir()):
        try:
            if shutil.disk_usage(base).free / 2**30 > need:
                return Path(tempfile.mkdtemp(prefix="kgrag_gpu_check_", dir=base))
        except OSError:
            continue
    return Path(tempfile.mkdtemp(prefix="kgrag_gpu_check_"))


def _tail(path: Path, n: int = 2500) -> str:
    try:
        return path.read_text(errors="replace")[-n:]
    except OSError:
        return ""


def _parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--dry-run", action="store_true", help="CPU, tiny shapes: proves the script, measures nothing real")
    ap.add_argument("--out", default=None, help=f"JSON file (default {REAL_OUT}, dry run {DRY_OUT})")
    ap.add_argument("--parts", default=",".join(PARTS), help=f"comma-separated subset of {','.join(PARTS)}")
    ap.add_argument("--budget-s", type=float, default=DEFAULT_BUDGET_S, help="the whole check's time budget")
    ap.add_argument("--bandwidth-tbs", type=float, default=H200_BANDWIDTH_TBS, help="GPU memory bandwidth for the bound")
    ap.add_argument("--keep-work", action="store_true", help="keep the work folder (models, records, logs)")
    ap.add_argument("--logs-dir", help="copy each part's log (and the notebook's) here before the work folder goes")
    ap.add_argument("--method-via", choices=("auto", "runner", "run"), default="auto",
                    help="the method part: through the runner (papermill), the method's run, or auto (runner if importable)")
    ap.add_argument("--child", choices=("method", "throughput"), help=argparse.SUPPRESS)
    ap.add_argument("--work", help=argparse.SUPPRESS)
    ap.add_argument("--partial", help=argparse.SUPPRESS)
    ap.add_argument("--deadline", type=float, help=argparse.SUPPRESS)
    return ap


def _child(args) -> int:
    """One part in this (child) process: its results go to the partial file as it goes."""
    partial = Partial(Path(args.partial))
    try:
        if args.child == "method":
            part_method(args.dry_run, Path(args.work), partial, args.deadline, args.method_via)
        else:
            part_throughput(args.dry_run, Path(args.work), partial, args.deadline, args.bandwidth_tbs)
        partial.set("complete", True)
        return 0
    except Exception as exc:
        partial.set("error", short(exc))
        partial.set("traceback", traceback.format_exc()[-3000:])
        raise


def _child_env(work: Path) -> dict:
    """The parts' environment: this checkout first on the path, offline hubs, fresh folders under `work`."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT)] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
    env.update({"KGRAG_ROOT": str(ROOT), "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1",
                "TOKENIZERS_PARALLELISM": "false", "PYTHONUNBUFFERED": "1"})
    for var, sub in (("KGRAG_CACHE_DIR", "cache"), ("KGRAG_RESULTS_DIR", "results"), ("KGRAG_RUNS_DIR", "runs"),
                     ("KGRAG_FIGURES_DIR", "figures"), ("KGRAG_SAMPLE_DIR", "sample")):
        env[var] = str(work / sub)  # fresh caches: every LLM call and embedding is computed, not replayed
    return env


def _run_part(name: str, args, work: Path, env: dict, timeout: float) -> dict:
    """One part within `timeout` seconds: the tests in a pytest process, the others in a child of this script."""
    log_path = work / f"{name}.log"
    t = time.time()
    with open(log_path, "w") as log:
        if name == "tests":
            result = run_tests_part(args.dry_run, work, env, timeout, log)
        else:
            partial = work / f"{name}.partial.json"
            cmd = [sys.executable, str(Path(__file__).resolve()), "--child", name, "--work", str(work),
                   "--partial", str(partial), "--deadline", str(t + timeout - 5),
                   "--bandwidth-tbs", str(args.bandwidth_tbs), "--method-via", args.method_via] + (
                ["--dry-run"] if args.dry_run else [])
            rc, seconds, timed_out = _run_child(cmd, env, timeout, log)
            result = json.loads(partial.read_text()) if partial.exists() else {}
            result.update({"exit_code": rc, "timed_out": timed_out})
            ok = rc == 0 and result.get("complete")
            if name == "method":
                steps = result.get("steps", {})
                ok = ok and all((steps.get(k) or {}).get("ok") for k in ("records", "records_oracle_patterns"))
            result["status"] = "ok" if ok else ("timeout" if timed_out else "failed")
    result["seconds"] = round(time.time() - t, 1)
    if result["status"] != "ok":
        result["log_tail"] = _tail(log_path)
    return result


def main(argv=None) -> int:
    ap = _parser()
    args = ap.parse_args(argv)
    if args.child:
        return _child(args)
    parts = [p.strip() for p in args.parts.split(",") if p.strip()]
    if unknown := [p for p in parts if p not in PARTS]:
        ap.error(f"unknown part(s) {unknown}: use {', '.join(PARTS)}")
    out = Path(args.out or (DRY_OUT if args.dry_run else REAL_OUT))
    out = out if out.is_absolute() else ROOT / out
    if args.dry_run and out.resolve() == (ROOT / REAL_OUT).resolve():
        ap.error(f"a dry run never writes {REAL_OUT}: that file holds GPU figures only")
    start = time.time()
    deadline = start + args.budget_s
    signal.signal(signal.SIGTERM, _stop_children)
    signal.signal(signal.SIGINT, _stop_children)
    machine = machine_info()
    if not args.dry_run and not machine.get("cuda_available"):
        write_result(out, {"check": "gpu_check", "dry_run": False, "status": "no_cuda", "date": _now(),
                           "machine": machine, "versions": versions()}, args)
        print("gpu_check: no CUDA device is visible to torch: run with --dry-run on a CPU machine.", file=sys.stderr)
        return 2
    work = _work_dir(args.dry_run)
    env = _child_env(work)
    record = {
        "check": "gpu_check", "dry_run": args.dry_run,
        "label": ("DRY RUN on the CPU with tiny shapes: proves the script runs; these are NOT GPU figures"
                  if args.dry_run else "GPU run: random weights, real shapes; speed and memory only, no quality"),
        "date": _now(), "machine": machine, "versions": versions(),
        "conditions": {"budget_s": args.budget_s, "parts": parts, "bandwidth_tbs": args.bandwidth_tbs,
                       "work_dir": str(work), "throughput": DRY_THROUGHPUT if args.dry_run else REAL_THROUGHPUT,
                       "method": DRY_METHOD if args.dry_run else METHOD},
        "parts": {p: {"status": "pending"} if p in parts else {"status": "not run", "reason": "not requested"}
                  for p in PARTS},
    }

    def save():
        record["seconds"] = round(time.time() - start, 1)
        write_result(out, record, args)  # + provenance (command, arguments, commit, environment)

    save()
    print(f"[gpu_check] {'DRY RUN (CPU)' if args.dry_run else 'GPU'}: parts {parts}, budget {args.budget_s:.0f} s, "
          f"work {work}", flush=True)
    try:
        for name in parts:  # tests, method, throughput: the order of PARTS
            cap = float("inf") if args.dry_run else PART_CAPS[name]
            left = deadline - time.time()
            if left < 20:
                record["parts"][name] = {"status": "skipped", "reason": f"time budget: {left:.0f} s left"}
                save()
                continue
            result = _run_part(name, args, work, env, timeout=min(cap, left))
            record["parts"][name] = result
            save()
            print(f"[gpu_check] {name}: {result['status']} in {result['seconds']} s", flush=True)
    finally:
        for p in parts:
            if record["parts"][p].get("status") == "pending":
                record["parts"][p] = {"status": "stopped", "reason": "the check was stopped (signal) or crashed first"}
        record["status"] = "ok" if all(record["parts"][p].get("status") == "ok" for p in parts) else "incomplete"
        save()
        if args.logs_dir:
            logs = Path(args.logs_dir)
            logs.mkdir(parents=True, exist_ok=True)
            for f in list(work.glob("*.log")) + list(work.glob("runs/*/*.log")) + list(work.glob("junit.xml")):
                shutil.copy2(f, logs / f.name)
        if not args.keep_work:
            shutil.rmtree(work, ignore_errors=True)
    print(f"[gpu_check] {record['status']} in {record['seconds']} s -> {out}", flush=True)
    return 0 if record["status"] == "ok" else 1


if __name__ == "__main__":
    sys.exit(main())
