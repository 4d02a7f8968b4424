"""Shared fixtures: isolated output folders for every test, and the real data when present."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _share_the_cores_between_workers() -> None:
    """Under pytest-xdist (`make test` runs `-n auto`), each worker gets its share of the cores.

    BLAS/OpenMP pools (numpy, torch, FAISS) and llama.cpp default to every core; two workers each running two
    threads on two cores wait on each other (a descheduled llama.cpp thread stalls the rest). A value already set
    in the environment wins. Thread counts are execution parameters: no result or cache key depends on them.
    """
    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1") or 1)
    if workers <= 1:
        return
    share = str(max(1, (os.cpu_count() or 1) // workers))
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS",
                "KGRAG_LLM_THREADS"):
        os.environ.setdefault(var, share)


_share_the_cores_between_workers()


def _real_data_dir() -> Path | None:
    env = os.environ.get("KGRAG_DATA_DIR")
    for cand in ([Path(env)] if env else []) + [ROOT.parent / "shared" / "data", ROOT / "data" / "real"]:
        if (cand / "MetaQA").is_dir() or (cand / "CLUTRR").is_dir():
            return cand.resolve()
    return None


REAL_DATA = _real_data_dir()


@pytest.fixture(autouse=True)
def _isolated_dirs(tmp_path_factory, monkeypatch):
    """Caches, results, figures and runs go to a temp folder so tests never touch the checkout.

    The sample-data folder is shared across the session (generation is deterministic).
    """
    base = tmp_path_factory.getbasetemp()
    monkeypatch.setenv("KGRAG_CACHE_DIR", str(base / "cache"))
    monkeypatch.setenv("KGRAG_RESULTS_DIR", str(base / "results"))
    monkeypatch.setenv("KGRAG_FIGURES_DIR", str(base / "figures"))
    monkeypatch.setenv("KGRAG_RUNS_DIR", str(base / "runs"))
    monkeypatch.setenv("KGRAG_SAMPLE_DIR", str(base / "sample"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("TRANSFORMERS_OFFLINE", "1")
    if REAL_DATA is not None:
        monkeypatch.setenv("KGRAG_DATA_DIR", str(REAL_DATA))
    else:
        monkeypatch.setenv("KGRAG_DATA_DIR", str(base / "no-real-data"))


@pytest.fixture
def real_data() -> Path:
    """Path of the real benchmark copies; skips the test with a reason when they are absent."""
    if REAL_DATA is None:
        pytest.skip("real benchmark copies not found (set KGRAG_DATA_DIR or place ../shared/data)")
    return REAL_DATA
