"""What the benchmark scripts share: the load record, percentiles, timing, child processes that answer with one
JSON line, MetaQA's entity names, and writing a result with its provenance (`records.write_result`: command,
arguments, commit, package versions). Named apart from benchmarks/peers/common.py, which the peers import."""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


def load() -> list[float]:
    """The 1, 5 and 15-minute load averages: a shared machine's timings are read beside them."""
    return [round(x, 2) for x in os.getloadavg()]


def machine(**extra) -> dict:
    return {"cpu_count": os.cpu_count(), "affinity": len(os.sched_getaffinity(0)), **extra}


def percentiles(values, unit: str, pcts=(50, 95), digits: int = 3) -> dict:
    """{"n", "median_<unit>", "p95_<unit>", ..., "max_<unit>"} of `values` (already in `unit`)."""
    import numpy as np

    arr = np.asarray(values, dtype=np.float64)
    out = {"n": int(arr.size)}
    for p in pcts:
        out[f"{'median' if p == 50 else f'p{p}'}_{unit}"] = round(float(np.percentile(arr, p)), digits)
    out[f"max_{unit}"] = round(float(arr.max()), digits)
    return out


def timed(fn, *args, **kwargs):
    """(fn's result, its wall seconds)."""
    t = time.perf_counter()
    out = fn(*args, **kwargs)
    return out, time.perf_counter() - t


def children_cpu_s() -> float:
    """User + system CPU seconds of the finished child processes (compilers, pip, make, ...)."""
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def peak_rss_mb() -> float:
    """This process's peak resident set size so far (Linux reports ru_maxrss in KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def json_child(cmd: list[str], env: dict | None = None, timeout: float | None = None) -> dict:
    """Run a measurement in its own process and read the JSON object on its last output line."""
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout)
    if proc.returncode != 0 or not proc.stdout.strip():
        raise RuntimeError(f"exit {proc.returncode}: {(proc.stderr or proc.stdout).strip()[-2000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def default_kb() -> Path:
    from kgrag_utils import settings

    return settings.data_dir() / "MetaQA" / "kb_reconstructed.txt"


def entity_names(kb: Path | None, limit: int) -> list[str]:
    """The distinct head/tail names of a `head|relation|tail` file in first-seen order, else generated names."""
    names: dict[str, None] = {}
    if kb is not None and kb.is_file():
        with kb.open(encoding="utf-8") as f:
            for line in f:
                parts = line.rstrip("\n").split("|")
                if len(parts) == 3:
                    names.setdefault(parts[0].strip())
                    names.setdefault(parts[2].strip())
                if len(names) >= limit:
                    break
        names.pop("", None)
    if not names:
        names = {f"Generated entity {i} of the benchmark": None for i in range(limit)}
    return list(names)[:limit]


def write(out, record: dict, args=None) -> Path:
    """The result, atomically, with its provenance block; says where it went."""
    from kgrag_utils.records import write_result

    path = write_result(out, record, args)
    print(f"wrote {path}", flush=True)
    return path


def write_rows(out, result: dict, args, row_format: str) -> Path:
    """Print `result["rows"]`, one line each through `row_format`, then write the result."""
    for row in result["rows"]:
        print(row_format.format(**row))
    return write(out, result, args)


def synthetic_kg_args(ap, edges_per_entity: int, relations: int) -> None:
    """The options of the synthetic power-law KG that both KG scale benchmarks build."""
    ap.add_argument("--edges", type=int, default=1_000_000)
    ap.add_argument("--entities", type=int, default=None, help=f"default: edges // {edges_per_entity}")
    ap.add_argument("--relations", type=int, default=relations)
    ap.add_argument("--alpha", type=float, default=0.75, help="Zipf exponent of entity popularity")
    ap.add_argument("--seed", type=int, default=0)
