"""How many CPU threads every component starts: one decision, from the CPUs this process may really use.

`os.cpu_count()` is the host's core count; a container, a JupyterHub limit or `taskset` gives a process
fewer. The budget here is

    available = min(affinity mask size, floor(cgroup CPU quota))       (at least 1)
    threads   = available - round(other load on those CPUs)           (at least 1)

where the cgroup quota is cgroup v2's `cpu.max` or v1's `cpu.cfs_quota_us / cpu.cfs_period_us` (of the
process's own cgroup and its parents; the smallest limit wins), and the other load is the mean number of
threads runnable besides this one (`procs_running` in /proc/stat, less the reader) over a short window
(`RUNNING_SAMPLES` reads, `RUNNING_INTERVAL_S` apart), scaled to the share of the host's CPUs in the
affinity mask. The 1-minute load average is not used: it lags a minute behind, so a process started on a
machine that has just gone quiet got one thread on 2 idle cores (half the throughput, measured by
benchmarks/cpu_threads.py), and it counts this process's own recent work (a notebook's embedding step) as
somebody else's. On a shared machine a thread
count equal to the cores is the worst choice: llama.cpp's and torch's threads wait for each other at
every step, so one descheduled thread stalls the rest while the others spin.

`KGRAG_THREADS` (a positive whole number) overrides the automatic value for every component;
`KGRAG_LLM_THREADS` overrides it for llama.cpp only (both its generation and prompt threads).

Applied to: llama.cpp (`n_threads`, `n_threads_batch`), torch (`set_num_threads`; inter-op 1), FAISS
(`omp_set_num_threads`), and, for libraries not loaded yet, the environment
variables BLAS and OpenMP read when they load (`OMP_NUM_THREADS`, `OPENBLAS_NUM_THREADS`,
`MKL_NUM_THREADS`; `OMP_WAIT_POLICY=PASSIVE` when the machine is busy, so that OpenMP threads, llama.cpp's
included, sleep at a barrier instead of spinning). Variables the user set are never changed.
`prepare_environment()` runs when `kgrag_utils` is imported, before torch, FAISS or llama.cpp load.

The decision is taken once per process (`budget()`), and `announce()` prints it once:
`threads: 1 (affinity 2, quota none, load 3.9)`.
"""

from __future__ import annotations

import importlib
import math
import os
import sys
import time
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from .errors import ConfigError

THREADS_ENV = "KGRAG_THREADS"
LLM_THREADS_ENV = "KGRAG_LLM_THREADS"

# Paths read for the quota and the instantaneous load (module constants, so tests can point them elsewhere).
CGROUP_ROOT = Path("/sys/fs/cgroup")
PROC_SELF_CGROUP = Path("/proc/self/cgroup")
PROC_STAT = Path("/proc/stat")

BLAS_ENV = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMEXPR_NUM_THREADS")
WAIT_POLICY_ENV = "OMP_WAIT_POLICY"
RUNNING_SAMPLES = 20  # /proc/stat reads over the window; their mean is the other load
RUNNING_INTERVAL_S = 0.005  # 20 reads 5 ms apart: a 0.1 s window, once per process


@dataclass(frozen=True)
class CpuBudget:
    """The CPUs this process may use and the thread count chosen for it."""

    affinity: int  # CPUs in the affinity mask
    quota: float | None  # cgroup CPU quota in CPUs (None: no limit)
    load: float | None  # other load on the available CPUs (None: unknown)
    threads: int  # what every component uses
    source: str  # "auto" or the variable that set it

    @property
    def available(self) -> int:
        return available_cpus(self.affinity, self.quota)

    @property
    def busy(self) -> bool:
        """True when other work occupies at least half a CPU of ours (fewer threads, non-spinning waits)."""
        return self.load is not None and self.load >= 0.5

    def line(self) -> str:
        quota = "none" if self.quota is None else f"{self.quota:g}"
        load = "unknown" if self.load is None else f"{self.load:.1f}"
        how = "" if self.source == "auto" else f"; set by {self.source}"
        return f"threads: {self.threads} (affinity {self.affinity}, quota {quota}, load {load}{how})"


def affinity_count() -> int:
    """CPUs in this process's affinity mask (taskset, cpusets); the core count where the OS has no masks."""
    getter = getattr(os, "sched_getaffinity", None)
    if getter is not None:
        try:
            return max(1, len(getter(0)))
        except OSError:
            pass
    return max(1, os.cpu_count() or 1)


def _own_cgroup_dirs() -> list[Path]:
    """The process's cgroup folders (v2 unified, and v1 cpu controller), each followed by its parents."""
    try:
        lines = PROC_SELF_CGROUP.read_text().splitlines()
    except OSError:
        lines = []
    dirs: list[Path] = []
    for line in lines:
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        _, controllers, rel = parts
        if controllers == "":
            bases = [CGROUP_ROOT]  # v2
        elif "cpu" in controllers.split(","):
            bases = [CGROUP_ROOT / controllers, CGROUP_ROOT / "cpu", CGROUP_ROOT / "cpu,cpuacct"]  # v1
        else:
            continue
        for base in bases:
            path = base / rel.lstrip("/")
            while True:
                if path not in dirs:
                    dirs.append(path)
                if path == base:
                    break
                path = path.parent
    for base in (CGROUP_ROOT, CGROUP_ROOT / "cpu", CGROUP_ROOT / "cpu,cpuacct"):  # a container sees its own at the root
        if base not in dirs:
            dirs.append(base)
    return dirs


def _quota_in(folder: Path) -> float | None:
    """The CPU limit recorded in one cgroup folder (v2 cpu.max or v1 cfs files), or None."""
    try:
        fields = (folder / "cpu.max").read_text().split()
        if len(fields) == 2 and fields[0] != "max":
            quota, period = float(fields[0]), float(fields[1])
            return quota / period if quota > 0 and period > 0 else None
        return None
    except (OSError, ValueError):
        pass
    try:
        quota = float((folder / "cpu.cfs_quota_us").read_text().strip())
        period = float((folder / "cpu.cfs_period_us").read_text().strip())
    except (OSError, ValueError):
        return None
    return quota / period if quota > 0 and period > 0 else None


def cgroup_quota() -> float | None:
    """The smallest cgroup CPU quota over this process's cgroup and its parents, in CPUs (None: unlimited)."""
    limits = [q for q in (_quota_in(d) for d in _own_cgroup_dirs()) if q is not None]
    return min(limits) if limits else None


def available_cpus(affinity: int, quota: float | None) -> int:
    """min(affinity, floor(quota)), at least 1: a quota of 1.5 CPUs throttles a second busy thread."""
    n = affinity if quota is None else min(affinity, math.floor(quota))
    return max(1, int(n))


def _running_now() -> float | None:
    """Mean of `RUNNING_SAMPLES` reads of the runnable threads on the host, less this one (None where unreadable).

    A mean over a window, not one read: a competitor that runs half the time counts as half a CPU."""
    samples = []
    for i in range(RUNNING_SAMPLES):
        try:
            text = PROC_STAT.read_text()
        except OSError:
            return None
        for line in text.splitlines():
            if line.startswith("procs_running "):
                samples.append(max(0, int(line.split()[1]) - 1))
                break
        else:
            return None
        if i + 1 < RUNNING_SAMPLES:
            time.sleep(RUNNING_INTERVAL_S)
    return sum(samples) / len(samples)


def other_load(affinity: int) -> float | None:
    """Other work on our CPUs: the threads runnable besides this one, scaled to our share of the host's CPUs."""
    running = _running_now()
    if running is None:
        return None
    host = max(1, os.cpu_count() or 1)
    return running * min(1.0, affinity / host)


def choose_threads(available: int, load: float | None) -> int:
    """available - round(load), clamped to [1, available]; all of them when the load is unknown."""
    if load is None:
        return available
    return max(1, min(available, available - int(load + 0.5)))


def _env_count(var: str) -> int | None:
    value = os.environ.get(var, "").strip()
    if not value:
        return None
    if not value.isdigit() or int(value) < 1:
        raise ConfigError(f"{var}={value!r} is not a positive whole number: set it to e.g. 1, or unset it for the "
                          f"automatic value (kgrag_utils/threads.py).")
    return int(value)


def measure() -> CpuBudget:
    """A fresh reading (affinity, quota, load) and the thread count it gives; `budget()` caches one."""
    affinity, quota = affinity_count(), cgroup_quota()
    load = other_load(affinity)
    forced = _env_count(THREADS_ENV)
    if forced is not None:
        return CpuBudget(affinity, quota, load, forced, THREADS_ENV)
    return CpuBudget(affinity, quota, load, choose_threads(available_cpus(affinity, quota), load), "auto")


@lru_cache(maxsize=1)
def budget() -> CpuBudget:
    """The process's one decision (measured on first use)."""
    return measure()


def llm_threads() -> int:
    """llama.cpp threads: `KGRAG_LLM_THREADS` if set, else the process's thread budget."""
    forced = _env_count(LLM_THREADS_ENV)
    return forced if forced is not None else budget().threads


_announced = False


def announce(stream=None) -> CpuBudget:
    """Print the decision once per process (stderr), and return it."""
    global _announced
    b = budget()
    if not _announced:
        _announced = True
        llm = _env_count(LLM_THREADS_ENV)
        extra = f"; llama.cpp {llm} ({LLM_THREADS_ENV})" if llm is not None else ""
        print(b.line() + extra, file=stream or sys.stderr)
    return b


def prepare_environment(b: CpuBudget | None = None) -> dict[str, str]:
    """Set, where unset, the variables BLAS/OpenMP libraries read when they load; returns what it set."""
    b = b or budget()
    wanted = {var: str(b.threads) for var in BLAS_ENV}
    if b.busy:
        wanted[WAIT_POLICY_ENV] = "PASSIVE"
    set_now = {}
    for var, value in wanted.items():
        if var not in os.environ:
            os.environ[var] = value
            set_now[var] = value
    return set_now


def _given_or_imported(module, name: str):
    """The module a caller passed in, else the installed one (torch and faiss are optional
    dependencies: only callers that use them call the configure functions)."""
    return module if module is not None else importlib.import_module(name)


def configure_torch(torch_module=None) -> int:
    """torch's intra-op threads to the budget, inter-op to 1 (where torch still allows it)."""
    torch = _given_or_imported(torch_module, "torch")
    n = budget().threads
    torch.set_num_threads(n)
    try:
        torch.set_num_interop_threads(1)
    except RuntimeError:  # torch allows it only before its first parallel work
        pass
    return n


def configure_faiss(faiss_module=None) -> int:
    """faiss's OpenMP threads to the budget."""
    n = budget().threads
    _given_or_imported(faiss_module, "faiss").omp_set_num_threads(n)
    return n

