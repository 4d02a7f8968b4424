"""What llama-cpp-python's compile costs, and what each CMake option saves.

    python benchmarks/llama_cpp_build.py --out benchmarks/results/llama_cpp_build.json
    python benchmarks/llama_cpp_build.py --variants default,makefile --out /tmp/x.json

Each variant builds the wheel `make setup` installs (pyproject.toml's `llamacpp` pin) from its sdist with
`pip wheel --no-deps --no-cache-dir` in a fresh folder with an empty PIP_CACHE_DIR, so everything is downloaded and
compiled. Recorded: wall and CPU seconds (user + sys of pip and every compiler it started: compare CPU seconds on a
shared machine), compile steps and the CPU-heavy targets from ninja's log, the wheel's libraries and size, load.
Variants: `default` (no options), `no_mtmd` (no multimodal library), `makefile` (the Makefile's LLAMA_CMAKE_ARGS).
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import time
import tomllib
import zipfile
from datetime import datetime, timezone
from pathlib import Path

from bench_common import ROOT, children_cpu_s, load, write

def llama_requirement() -> str:
    """llama-cpp-python's pin from pyproject.toml's `llamacpp` extra, without extras: 'llama-cpp-python==X'."""
    extra = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["optional-dependencies"]
    req = next(r for r in extra["llamacpp"] if r.lower().replace("_", "-").startswith("llama-cpp-python"))
    return re.sub(r"\[.*?\]", "", req)


def makefile_cmake_args() -> str:
    return subprocess.run(["make", "-s", "--no-print-directory", "print-LLAMA_CMAKE_ARGS"], cwd=ROOT,
                          capture_output=True, text=True, check=True).stdout.strip()


def variants() -> dict[str, dict[str, str]]:
    return {"default": {}, "no_mtmd": {"CMAKE_ARGS": "-DLLAVA_BUILD=OFF"}, "makefile": {"CMAKE_ARGS": makefile_cmake_args()}}


def _ninja_targets(build_dir: Path) -> dict:
    """Compile steps and summed step seconds per CMake target from ninja's log (steps overlap in time)."""
    log = build_dir / ".ninja_log"
    if not log.exists():
        return {}
    per: collections.Counter = collections.Counter()
    lines = [ln.split("\t") for ln in log.read_text().splitlines() if not ln.startswith("#")]
    for start, end, _, out, *_ in lines:
        parts = out.split("/")
        target = parts[parts.index("CMakeFiles") + 1].removesuffix(".dir") if "CMakeFiles" in parts else "link/other"
        per[target] += (int(end) - int(start)) / 1000
    return {"steps": len(lines), "step_seconds_by_target": {k: round(v, 1) for k, v in per.most_common(8)}}


def build(name: str, env_extra: dict[str, str], requirement: str, nice: int) -> dict:
    tmp = Path(tempfile.mkdtemp(prefix=f"lcp-{name}-"))
    env = {k: v for k, v in os.environ.items() if k not in ("CMAKE_ARGS", "CMAKE_GENERATOR", "CMAKE_BUILD_PARALLEL_LEVEL")}
    # SKBUILD_BUILD_DIR is kept, to read ninja's log
    env.update(env_extra, PIP_CACHE_DIR=str(tmp / "pip-cache"), SKBUILD_BUILD_DIR=str(tmp / "build"))
    cmd = ["nice", "-n", str(nice), sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-cache-dir", "-v",
           requirement, "-w", str(tmp / "wheel")]
    load_before, cpu0, t0 = load(), children_cpu_s(), time.perf_counter()
    with open(tmp / "build.log", "w") as log:
        rc = subprocess.run(cmd, env=env, stdout=log, stderr=subprocess.STDOUT).returncode
    entry = {"variant": name, "env": env_extra, "returncode": rc, "wall_s": round(time.perf_counter() - t0, 1),
             "cpu_s": round(children_cpu_s() - cpu0, 1), "load_before": load_before, "load_after": load(),
             **_ninja_targets(tmp / "build")}
    wheels = list((tmp / "wheel").glob("*.whl"))
    if wheels:
        with zipfile.ZipFile(wheels[0]) as z:
            entry["wheel_libs"] = sorted({Path(n).name.split(".so")[0] for n in z.namelist()
                                          if n.startswith("llama_cpp/lib/") and ".so" in n})
        entry["wheel_mb"] = round(wheels[0].stat().st_size / 1e6, 1)
    else:
        entry["log_tail"] = (tmp / "build.log").read_text(errors="replace")[-2000:]
    shutil.rmtree(tmp, ignore_errors=True)
    return entry


def _version(cmd) -> str | None:
    try:
        return subprocess.run(cmd, capture_output=True, text=True).stdout.splitlines()[0].strip()
    except (OSError, IndexError):
        return None


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--variants", default=",".join(variants()), help="comma-separated, from default, no_mtmd, makefile")
    ap.add_argument("--nice", type=int, default=15)
    ap.add_argument("--out", default="benchmarks/results/llama_cpp_build.json")
    ap.add_argument("--append", action="store_true", help="keep the builds already in --out and add these")
    args = ap.parse_args(argv)
    table, names = variants(), [v for v in args.variants.split(",") if v]
    if unknown := [v for v in names if v not in table]:
        ap.error(f"unknown variants {unknown}: choose from {list(table)}")
    now = datetime.now(timezone.utc).isoformat(timespec="seconds")
    result = {"benchmark": "llama_cpp_build", "requirement": llama_requirement(), "started": now,
              "machine": {"cpus": os.cpu_count(), "platform": platform.platform(), "python": platform.python_version(),
                          **{k: _version([k, "--version"]) for k in ("cmake", "ninja", "cc")}},
              "makefile_cmake_args": makefile_cmake_args(), "builds": []}
    out = Path(args.out) if Path(args.out).is_absolute() else ROOT / args.out
    if args.append and out.exists():  # the earlier run's builds and start, this run's start beside them
        earlier = json.loads(out.read_text(encoding="utf-8"))
        result.update(builds=earlier["builds"], started=earlier["started"],
                      appended_runs=earlier.get("appended_runs", []) + [now])
    for name in names:
        entry = {"started": datetime.now(timezone.utc).isoformat(timespec="seconds"),
                 **build(name, table[name], result["requirement"], args.nice)}
        result["builds"].append(entry)
        print(f"{name:18s} rc={entry['returncode']} wall={entry['wall_s']:7.1f}s cpu={entry['cpu_s']:7.1f}s "
              f"steps={entry.get('steps')} load={entry['load_before'][0]}->{entry['load_after'][0]}", flush=True)
        write(args.out, result)  # after every build: a long run keeps what it measured
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
