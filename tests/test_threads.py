"""kgrag_utils/threads.py: affinity, cgroup quota (v1 and v2, on fake files), load, the one setting."""

from __future__ import annotations

import os

import pytest

from kgrag_utils import threads
from kgrag_utils.errors import ConfigError


@pytest.fixture
def fake_proc(tmp_path, monkeypatch):
    """A fake /sys/fs/cgroup, /proc/self/cgroup and /proc/stat; returns a helper to fill them."""
    root = tmp_path / "cgroup"
    root.mkdir()
    monkeypatch.setattr(threads, "CGROUP_ROOT", root)
    monkeypatch.setattr(threads, "PROC_SELF_CGROUP", tmp_path / "self_cgroup")
    monkeypatch.setattr(threads, "PROC_STAT", tmp_path / "stat")
    (tmp_path / "stat").write_text("cpu  1 2 3\nprocs_running 1\nprocs_blocked 0\n")
    threads.budget.cache_clear()
    yield root, tmp_path
    threads.budget.cache_clear()


def _write(path, text):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def test_cgroup_v2_quota_of_own_group_and_parents(fake_proc):
    root, tmp = fake_proc
    _write(tmp / "self_cgroup", "0::/user.slice/hub/alice\n")
    _write(root / "user.slice/hub/alice/cpu.max", "max 100000\n")
    _write(root / "user.slice/hub/cpu.max", "150000 100000\n")  # the parent's 1.5 CPUs bind the child
    _write(root / "cpu.max", "max 100000\n")
    assert threads.cgroup_quota() == pytest.approx(1.5)
    assert threads.available_cpus(8, threads.cgroup_quota()) == 1


def test_cgroup_v2_unlimited_and_container_root(fake_proc):
    root, tmp = fake_proc
    _write(tmp / "self_cgroup", "0::/\n")
    _write(root / "cpu.max", "max 100000\n")
    assert threads.cgroup_quota() is None
    _write(root / "cpu.max", "400000 100000\n")  # a container sees its own limit at the root
    assert threads.cgroup_quota() == pytest.approx(4.0)


def test_cgroup_v1_quota(fake_proc):
    root, tmp = fake_proc
    _write(tmp / "self_cgroup", "12:memory:/docker/abc\n4:cpu,cpuacct:/docker/abc\n")
    _write(root / "cpu,cpuacct/docker/abc/cpu.cfs_quota_us", "200000\n")
    _write(root / "cpu,cpuacct/docker/abc/cpu.cfs_period_us", "100000\n")
    assert threads.cgroup_quota() == pytest.approx(2.0)
    _write(root / "cpu,cpuacct/docker/abc/cpu.cfs_quota_us", "-1\n")  # -1: no limit
    assert threads.cgroup_quota() is None


def test_no_cgroup_files_means_no_quota(fake_proc):
    assert threads.cgroup_quota() is None


def test_garbled_cgroup_file_is_ignored(fake_proc):
    root, tmp = fake_proc
    _write(tmp / "self_cgroup", "0::/\n")
    _write(root / "cpu.max", "lots 100000\n")
    assert threads.cgroup_quota() is None


def test_affinity_mask_not_cpu_count(monkeypatch):
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 3, 5}, raising=False)
    monkeypatch.setattr(os, "cpu_count", lambda: 64)
    assert threads.affinity_count() == 3


@pytest.mark.parametrize("available,load,expected", [
    (2, 0.0, 2), (2, 0.4, 2), (2, 0.6, 1), (2, 2.0, 1), (2, 9.0, 1), (8, 2.6, 5), (4, None, 4), (1, 0.0, 1),
])
def test_choose_threads(available, load, expected):
    assert threads.choose_threads(available, load) == expected


def test_available_cpus_floor_of_quota():
    assert threads.available_cpus(8, None) == 8
    assert threads.available_cpus(8, 2.9) == 2
    assert threads.available_cpus(8, 0.5) == 1  # never below one
    assert threads.available_cpus(2, 16.0) == 2


def test_load_is_the_runnable_threads_besides_ours_scaled_to_our_share(fake_proc, monkeypatch):
    _, tmp = fake_proc
    monkeypatch.setattr(threads, "RUNNING_INTERVAL_S", 0.0)
    (tmp / "stat").write_text("cpu 1\nprocs_running 5\n")  # 4 others runnable besides this thread
    monkeypatch.setattr(os, "getloadavg", lambda: (9.0, 9.0, 9.0))  # a lagging load average is not read
    monkeypatch.setattr(os, "cpu_count", lambda: 8)
    assert threads.other_load(8) == pytest.approx(4.0)
    assert threads.other_load(2) == pytest.approx(1.0)  # a quarter of the host's CPUs: a quarter of its load


def test_load_is_the_mean_over_the_window(fake_proc, monkeypatch):
    """A competitor runnable in half of the reads counts as half a CPU (one read would say 0 or 1)."""
    _, tmp = fake_proc
    monkeypatch.setattr(threads, "RUNNING_INTERVAL_S", 0.0)
    monkeypatch.setattr(threads, "RUNNING_SAMPLES", 4)
    reads = iter(["procs_running 2\n", "procs_running 1\n", "procs_running 2\n", "procs_running 1\n"])
    monkeypatch.setattr(threads, "PROC_STAT", type("Stat", (), {"read_text": lambda self: next(reads)})())
    monkeypatch.setattr(os, "cpu_count", lambda: 2)
    assert threads.other_load(2) == pytest.approx(0.5)


def _two_cores_auto(monkeypatch):
    monkeypatch.setattr(threads, "RUNNING_INTERVAL_S", 0.0)
    monkeypatch.delenv(threads.THREADS_ENV, raising=False)
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1}, raising=False)
    monkeypatch.setattr(os, "cpu_count", lambda: 2)


def test_measure_busy_machine_gets_fewer_threads(fake_proc, monkeypatch):
    _, tmp = fake_proc
    _two_cores_auto(monkeypatch)
    (tmp / "stat").write_text("procs_running 3\n")  # two competing threads besides this one
    b = threads.measure()
    assert (b.affinity, b.quota, b.threads, b.source, b.busy) == (2, None, 1, "auto", True)
    assert b.line() == "threads: 1 (affinity 2, quota none, load 2.0)"


def test_a_machine_gone_quiet_gets_every_cpu_whatever_its_load_average(fake_proc, monkeypatch):
    """The 1-minute load average stays high for minutes after a job ends (or counts our own last step)."""
    _, tmp = fake_proc
    _two_cores_auto(monkeypatch)
    monkeypatch.setattr(os, "getloadavg", lambda: (1.6, 2.0, 1.0))
    (tmp / "stat").write_text("procs_running 1\n")
    idle = threads.measure()
    assert idle.threads == 2 and not idle.busy


def test_kgrag_threads_overrides_and_llm_override(fake_proc, monkeypatch):
    monkeypatch.setenv(threads.THREADS_ENV, "3")
    monkeypatch.delenv(threads.LLM_THREADS_ENV, raising=False)
    b = threads.budget()
    assert b.threads == 3 and b.source == "KGRAG_THREADS"
    assert "set by KGRAG_THREADS" in b.line()
    assert threads.llm_threads() == 3
    monkeypatch.setenv(threads.LLM_THREADS_ENV, "1")
    assert threads.llm_threads() == 1


@pytest.mark.parametrize("bad", ["0", "two", "-1", "1.5"])
def test_bad_setting_is_one_line_error(fake_proc, monkeypatch, bad):
    monkeypatch.setenv(threads.THREADS_ENV, bad)
    with pytest.raises(ConfigError, match="KGRAG_THREADS"):
        threads.measure()


def test_prepare_environment_sets_only_unset_variables(monkeypatch):
    b = threads.CpuBudget(affinity=2, quota=None, load=3.0, threads=1, source="auto")
    for var in (*threads.BLAS_ENV, threads.WAIT_POLICY_ENV):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("MKL_NUM_THREADS", "7")  # the user's own value stays
    done = threads.prepare_environment(b)
    assert os.environ["OMP_NUM_THREADS"] == "1" and os.environ["MKL_NUM_THREADS"] == "7"
    assert done[threads.WAIT_POLICY_ENV] == "PASSIVE" and "MKL_NUM_THREADS" not in done
    monkeypatch.delenv(threads.WAIT_POLICY_ENV)
    idle = threads.CpuBudget(affinity=2, quota=None, load=0.1, threads=2, source="auto")
    assert threads.WAIT_POLICY_ENV not in threads.prepare_environment(idle)  # idle: OpenMP's own wait


class _FakeTorch:
    def __init__(self):
        self.calls = []

    def set_num_threads(self, n):
        self.calls.append(("intra", n))

    def set_num_interop_threads(self, n):
        raise RuntimeError("cannot set number of interop threads after parallel work has started")


class _FakeFaiss:
    def __init__(self):
        self.n = None

    def omp_set_num_threads(self, n):
        self.n = n


def test_configure_components(fake_proc, monkeypatch):
    monkeypatch.setenv(threads.THREADS_ENV, "2")
    torch = _FakeTorch()
    assert threads.configure_torch(torch) == 2 and torch.calls == [("intra", 2)]  # late inter-op: tolerated
    faiss = _FakeFaiss()
    assert threads.configure_faiss(faiss) == 2 and faiss.n == 2


def test_announce_prints_once(fake_proc, monkeypatch, capsys):
    monkeypatch.setenv(threads.THREADS_ENV, "1")
    monkeypatch.setattr(threads, "_announced", False)
    threads.announce()
    threads.announce()
    err = capsys.readouterr().err
    assert err.count("threads: 1 (affinity") == 1
