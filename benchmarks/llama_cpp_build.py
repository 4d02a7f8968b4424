"""What llama-cpp-python's compile costs, and what each CMake option saves.

    python benchmarks/llama_cpp_build.py --out benchmarks/results/llama_cpp_build.json
    python benchmarks/llama_cpp_build.py --variants default,makefile --out /tmp/x.json

Each variant builds the wheel `make setup` installs (the pin in pyproject.toml's `llamacpp` extra) from its
sdist with `pip wheel --no-deps --no-cache-dir`, in a fresh temporary folder with an empty PIP_CACHE_DIR, so
every build downloads the sdist and its build requirements and compiles everything. Recorded per variant: wall
seconds, CPU seconds (user + sys of pip and every compiler it started), the number of compile steps and the
CPU-heavy targets from ninja's log, the shared libraries in the wheel, and the load average before and after
(the machine may be shared: compare CPU seconds first, wall seconds only under equal load).

Variants (`makefile` takes the Makefile's LLAMA_CMAKE_ARGS, so the figure is the one `make setup` gets):
- default: no CMake options (what plain `pip install llama-cpp-python` compiles)
- no_mtmd: -DLLAVA_BUILD=OFF (no multimodal library)
- no_common: only the Makefile's project include (no libllama-common / cpp-httplib)
- makefile: both (the Makefile's LLAMA_CMAKE_ARGS)
- makefile_generic: + -DGGML_NATIVE=OFF (portable instruction set instead of this CPU's)
- makefile_j2: ninja with CMAKE_BUILD_PARALLEL_LEVEL=2 (default: ninja's cores + 2)
- makefile_make_j1: CMAKE_GENERATOR="Unix Makefiles" (cmake --build runs make without -j: serial)
- makefile_O2: -O2 instead of Release's -O3
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import platform
import re
import resource
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
import tomllib
import zipfile
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from kgrag_utils.records import write_result  # noqa: E402


def llama_requirement() -> str:
    """llama-cpp-python's pin from pyproject.toml's `llamacpp` extra, without extras: 'llama-cpp-python==X'."""
    extra = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["optional-dependencies"]["llamacpp"]
    req = next(r for r in extra if r.lower().replace("_", "-").startswith("llama-cpp-python"))
    return re.sub(r"\[.*?\]", "", req)


def makefile_cmake_args() -> str:
    out = subprocess.run(["make", "-s", "--no-print-directory", "print-LLAMA_CMAKE_ARGS"], cwd=ROOT,
                         capture_output=True, text=True, check=True)
    return out.stdout.strip()


def variants() -> dict[str, dict[str, str]]:
    lean = makefile_cmake_args()
    include = next(a for a in shlex.split(lean) if a.startswith("-DCMAKE_PROJECT_INCLUDE"))
    return {
        "default": {},
        "no_mtmd": {"CMAKE_ARGS": "-DLLAVA_BUILD=OFF"},
        "no_common": {"CMAKE_ARGS": shlex.quote(include)},
        "makefile": {"CMAKE_ARGS": lean},
        "makefile_generic": {"CMAKE_ARGS": lean + " -DGGML_NATIVE=OFF"},
        "makefile_j2": {"CMAKE_ARGS": lean, "CMAKE_BUILD_PARALLEL_LEVEL": "2"},
        "makefile_make_j1": {"CMAKE_ARGS": lean, "CMAKE_GENERATOR": "Unix Makefiles"},
        "makefile_O2": {"CMAKE_ARGS": lean + " '-DCMAKE_C_FLAGS_RELEASE=-O2 -DNDEBUG' '-DCMAKE_CXX_FLAGS_RELEASE=-O2 -DNDEBUG'"},
    }


def _children_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def _ninja_targets(build_dir: Path) -> dict:
    """Compile steps and summed step seconds per CMake target from ninja's log (steps overlap in time)."""
    log = build_dir / ".ninja_log"
    if not log.exists():
        return {}
    per: collections.Counter = collections.Counter()
    steps = 0
    for line in log.read_text().splitlines():
        if line.startswith("#"):
            continue
        start, end, _, out, *_ = line.split("\t")
        parts = out.split("/")
        target = parts[parts.index("CMakeFiles") + 1].removesuffix(".dir") if "CMakeFiles" in parts else "link/other"
        per[target] += (int(end) - int(start)) / 1000
        steps += 1
    return {"steps": steps, "step_seconds_by_target": {k: round(v, 1) for k, v in per.most_common(8)}}


def build(name: str, env_extra: dict[str, str], requirement: str, nice: int) -> dict:
    tmp = Path(tempfile.mkdtemp(prefix=f"lcp-{name}-"))
    env = {k: v for k, v in os.environ.items() if k not in ("CMAKE_ARGS", "CMAKE_GENERATOR", "CMAKE_BUILD_PARALLEL_LEVEL")}
    env.update(env_extra)
    env["PIP_CACHE_DIR"] = str(tmp / "pip-cache")
    env["SKBUILD_BUILD_DIR"] = str(tmp / "build")  # kept, to read ninja's log
    cmd = ["nice", "-n", str(nice), sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-cache-dir", "-v",
           requirement, "-w", str(tmp / "wheel")]
    load_before = os.getloadavg()
    cpu0, t0 = _children_cpu(), time.perf_counter()
    with open(tmp / "build.log", "w") as log:
        rc = subprocess.run(cmd, env=env, stdout=log, stderr=subprocess.STDOUT).returncode
    wall, cpu = time.perf_counter() - t0, _children_cpu() - cpu0
    entry = {"variant": name, "env": env_extra, "returncode": rc, "wall_s": round(wall, 1), "cpu_s": round(cpu, 1),
             "load_before": [round(x, 2) for x in load_before], "load_after": [round(x, 2) for x in os.getloadavg()],
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


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--variants", default=",".join(variants()), help="comma-separated names (see the module docstring)")
    ap.add_argument("--nice", type=int, default=15)
    ap.add_argument("--out", default="benchmarks/results/llama_cpp_build.json")
    ap.add_argument("--append", action="store_true", help="keep the builds already in --out and add these")
    args = ap.parse_args(argv)
    table = variants()
    names = [v for v in args.variants.split(",") if v]
    unknown = [v for v in names if v not in table]
    if unknown:
        ap.error(f"unknown variants {unknown}: choose from {list(table)}")
    requirement = llama_requirement()
    result = {"benchmark": "llama_cpp_build", "requirement": requirement, "started": datetime.now(timezone.utc).isoformat(timespec="seconds"),
              "machine": {"cpus": os.cpu_count(), "platform": platform.platform(), "python": platform.python_version(),
                          "cmake": _version(["cmake", "--version"]), "ninja": _version(["ninja", "--version"]),
                          "cc": _version(["cc", "--version"])},
              "makefile_cmake_args": makefile_cmake_args(), "builds": []}
    out = Path(args.out) if Path(args.out).is_absolute() else ROOT / args.out
    if args.append and out.exists():  # the earlier run's builds and start, this run's start beside them
        earlier = json.loads(out.read_text(encoding="utf-8"))
        result["builds"] = earlier["builds"]
        result["appended_runs"] = earlier.get("appended_runs", []) + [result["started"]]
        result["started"] = earlier["started"]
    for name in names:
        started = datetime.now(timezone.utc).isoformat(timespec="seconds")
        entry = {"started": started, **build(name, table[name], requirement, args.nice)}
        result["builds"].append(entry)
        print(f"{name:18s} rc={entry['returncode']} wall={entry['wall_s']:7.1f}s cpu={entry['cpu_s']:7.1f}s "
              f"steps={entry.get('steps')} load={entry['load_before'][0]}->{entry['load_after'][0]}", flush=True)
        write_result(args.out, result)  # after every build: a long run keeps what it measured
    return 0


def _version(cmd) -> str | None:
    try:
        return subprocess.run(cmd, capture_output=True, text=True).stdout.splitlines()[0].strip()
    except (OSError, IndexError):
        return None


if __name__ == "__main__":
    raise SystemExit(main())
