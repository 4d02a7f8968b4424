"""vector-graph-rag 0.4.0 (Milvus' implementation) beside our vector rerank: same questions, embedder, LLM.

    benchmarks/peers/setup.sh vector-graph-rag                  # once: its own environment
    python benchmarks/peers/vgr.py --index-only                 # once: the peer's index, no LLM (outside the lock)
    flock /tmp/kgrag-llm.lock python benchmarks/peers/vgr.py --chunk 50    # repeat until it says "complete"
    python benchmarks/peers/vgr.py --sides ours --peer-from benchmarks/results/peers_vgr_musique_n100.json
                                   # ours again against the committed peer outcomes (no peer, no peer environment)

The peer gets the MuSiQue corpus with the released OpenIE triples through `add_documents_with_triplets`,
the packaged MiniLM through its HuggingFace embedding provider, and the packaged Qwen2.5-Coder-1.5B
through `openai_base_url`: llama.cpp's OpenAI-compatible server, which this script starts on
127.0.0.1 and stops. Its knobs are its own defaults except `final_top_k` (5, for Recall@5) and what
`--peer-setting` overrides. Our side is notebooks/03_vector_rerank.ipynb on the same 100 questions
(seeded sample, the same as benchmarks/results/vector_rerank_musique_n100_*; executed as `kgrag run` does), with the
same GGUF and the same MiniLM read to the same length: 512 word pieces (`--embedder minilm@512`), where
the project's default cuts at 256. Both sides' per-question outputs are kept (ours: results/<run>/examples.jsonl; the
peer's: results/peers/<run>/peer.jsonl), and the rows (Recall@2 / @5, like with like: naive,
graph without LLM, graph + rerank, graph + rerank padded with naive passages) go to
benchmarks/results/peers.json. The package sets no max_tokens; the harness gives its calls a
budget of --peer-max-tokens (1024), which only a looping reply reaches (ours: rerank 128, entities 64), and
records each call's finish reason.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
sys.path.insert(0, str(Path(__file__).resolve().parent))

import common  # noqa: E402
from worker_io import append_jsonl  # noqa: E402

PEER = "vector-graph-rag"
LLM_LABEL = "{preset} (packaged GGUF, llama.cpp, greedy)"
KS = (2, 5)
# the package passes no max_tokens: a looping greedy reply ran to the 16k context (over 4 minutes on 2 cores); its
# replies that end by themselves are about 150-330 tokens (chosen UUIDs and a thought), so 1024 binds only loops
PEER_MAX_TOKENS = 1024
# the same embedder on both sides: the peer's HuggingFace provider tokenizes with max_length=512, sentence-transformers
# cuts MiniLM at its configured 256; at 512 our naive top 5 equals the peer's (benchmarks/results/peers_vgr_naive_trace.json)
OURS_EMBEDDER = "minilm@512"
# like with like: (our variant, the peer's list, the peer's label)
PAIRS = (("naive", "naive", "naive: retrieve_naive"),
         ("expand", "expand_unpadded", "graph, no LLM: candidates in the package's order, unpadded"),
         ("rerank", "rerank", "graph + LLM rerank, unpadded"),
         ("rerank-padded", "padded", "graph + LLM rerank padded with naive: retrieve(), its evaluation path"))


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dataset", default="musique")
    ap.add_argument("--limit", type=int, default=100)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--preset", default="qwen2.5-coder-1.5b")
    ap.add_argument("--structured", default="", choices=("", "off", "schema"),
                    help="our side's decoding mode ('' = the preset's default)")
    ap.add_argument("--embedder", default=OURS_EMBEDDER,
                    help="our side's embedder; the default reads 512 word pieces, as the peer's provider does "
                         "('minilm' cuts at MiniLM's configured 256: benchmarks/peers/vgr_naive_trace.py)")
    ap.add_argument("--peer-setting", action="append", default=[], metavar="KEY=VALUE",
                    help="a vector_graph_rag Settings override (JSON value), e.g. relation_number_threshold=40")
    ap.add_argument("--peer-max-tokens", type=int, default=PEER_MAX_TOKENS,
                    help="reply budget of the peer's LLM calls, which set none (0: unbounded, up to the context)")
    ap.add_argument("--chunk", type=int, default=0, help="at most this many new questions of the peer (0: all; our "
                    "side's notebook run resumes from its records when it is stopped)")
    ap.add_argument("--sides", default="peer,ours")
    ap.add_argument("--index-only", action="store_true",
                    help="build the peer's index (embeddings, Milvus Lite) and stop: run it outside the LLM lock")
    ap.add_argument("--base-url", default=None, help="an OpenAI-compatible server already running (tests)")
    ap.add_argument("--peer-python", default=None)
    ap.add_argument("--work-dir", type=Path, default=None, help="default: $PEERS_HOME/work/vector-graph-rag")
    ap.add_argument("--out", default=common.RESULTS_FILE)
    ap.add_argument("--n-ctx", type=int, default=16384)
    ap.add_argument("--partial", action="store_true",
                    help="score the questions the peer has answered so far, if fewer than all (rows say 'the first N "
                         "of the seeded 100'; give another --out, e.g. benchmarks/results/peers_vgr_partial.json)")
    ap.add_argument("--outcomes-only", action="store_true",
                    help="compute nothing: write the peer outcomes file of the questions recorded so far")
    ap.add_argument("--peer-from", type=Path, default=None,
                    help="a peer outcomes file an earlier run wrote (peers_vgr_<dataset>_n<N>.json beside --out): "
                         "the peer's passage lists of its questions come from it instead of the peer (the rest are "
                         "computed), e.g. on a machine whose peer records are gone")
    return ap.parse_args(argv)


def peer_settings(args, url: str, work: Path) -> dict:
    s = {"openai_base_url": url, "openai_api_key": "not-needed", "llm_model": args.preset,
         "embedding_provider": "huggingface", "embedding_model": str(common.minilm_dir()), "embedding_dimension": 384,
         "milvus_uri": str(work / "vgr.db"), "final_top_k": 5, "ner_cache_dir": None, "use_llm_cache": True}
    for kv in args.peer_setting:
        key, _, value = kv.partition("=")
        s[key] = json.loads(value)
    return s


def cap_label(args) -> str:
    return f", replies capped at {args.peer_max_tokens} tokens" if args.peer_max_tokens else ""


def setting_tag(args) -> str:
    return "defaults" + "".join(f"+{kv}" for kv in sorted(args.peer_setting))


def write_inputs(ds, work: Path) -> tuple[Path, Path]:
    from kgrag_utils.methods.vector_rerank.stages.graph_index import passage_text

    work.mkdir(parents=True, exist_ok=True)
    corpus, questions = work / "corpus.jsonl", work / "questions.jsonl"
    triples = ds.triples or {}
    with open(corpus, "w", encoding="utf-8") as f:
        for p in ds.corpus:
            rows = [list(map(str, t[:3])) for t in triples.get(p.pid, []) if len(t) >= 3]
            f.write(json.dumps({"id": p.pid, "passage": passage_text(p.title, p.text), "triplets": rows}) + "\n")
    with open(questions, "w", encoding="utf-8") as f:
        for q in ds.items:
            f.write(json.dumps({"id": q.qid, "question": q.question}) + "\n")
    return corpus, questions


# what the outcomes file keeps of each peer line: the passage lists the rows score, and stage counts (no texts)
OUTCOME_KEYS = tuple(key for _, key, _ in PAIRS) + ("failed", "n_candidates")


def outcomes_path(args, n: int) -> Path:
    return outcomes_file(args.dataset, n, args.out)


def outcomes_file(dataset: str, n: int, out: str | Path = common.RESULTS_FILE) -> Path:
    """Where the peer outcomes file of `dataset` with n questions lives: beside the rows file `out`."""
    out = Path(out) if Path(out).is_absolute() else common.REPO / out
    return out.parent / f"peers_vgr_{dataset}_n{n}.json"


def _pid_key(pid: str) -> str:
    """A passage id as the outcomes file holds it: a short hash, so that no passage title is committed."""
    import hashlib

    return hashlib.sha1(str(pid).encode("utf-8")).hexdigest()[:12]


def _hashed(row: dict) -> dict:
    return {k: ([_pid_key(p) for p in v] if isinstance(v, list) else v) for k, v in row.items()}


def unhashed_questions(data: dict, ds) -> dict:
    """An outcomes file's questions by id, their passage lists mapped back to this corpus's passage ids."""
    pids = {_pid_key(p.pid): p.pid for p in ds.corpus}
    return {r["id"]: {k: [pids[h] for h in v] if k in OUTCOME_KEYS and isinstance(v, list) else v
                      for k, v in r.items()} for r in data["questions"]}


def outcomes(args, ds, peer_path: Path, version: str) -> dict:
    """The peer's per-question passage ids so far (committed, so that a later run restores them instead of asking
    the peer again), in the seeded order of the questions."""
    peer = common.by_id(common.read_jsonl(peer_path))
    done = [q for q in ds.items if q.qid in peer]
    calls = [c for q in done for c in peer[q.qid].get("llm_calls") or []]
    return {"benchmark": "peers_vgr", "peer": PEER, "peer_version": version, "dataset": args.dataset,
            "limit": args.limit, "seed": args.seed, "preset": args.preset, "setting": setting_tag(args),
            "peer_max_tokens": args.peer_max_tokens, "n_planned": len(ds.items), "n_done": len(done),
            "complete": len(done) == len(ds.items),
            "llm_calls": {"n": len(calls), "hit_the_budget": sum(c.get("finish") == "length" for c in calls)},
            "about": "vector-graph-rag's passage ids per question and list (naive, padded, rerank, expand_unpadded), "
                     "the number of candidate relations, and failed; benchmarks/peers/vgr.py --peer-from reads it "
                     "(a partial file: its questions are restored, the rest computed)",
            "passage_ids": "sha1(pid)[:12]: the restoring run maps them back through its own corpus",
            "questions": [{"id": q.qid, **_hashed({k: peer[q.qid].get(k) for k in OUTCOME_KEYS if k in peer[q.qid]})}
                          for q in done]}


def restore_peer(args, ds, peer_path: Path) -> int:
    """Lines of peer.jsonl from an outcomes file (refused when it is of other questions or settings)."""
    data = json.loads(Path(args.peer_from).read_text(encoding="utf-8"))
    want = {"dataset": args.dataset, "limit": args.limit, "seed": args.seed, "preset": args.preset,
            "setting": setting_tag(args), "peer_max_tokens": args.peer_max_tokens}
    wrong = {k: (data.get(k), v) for k, v in want.items() if data.get(k) != v}
    if wrong:
        raise SystemExit(f"--peer-from {args.peer_from}: made with other settings ({wrong}, as (file, this run)); "
                         "pass the same --dataset/--limit/--seed/--preset/--peer-setting as the run that wrote it.")
    have, rows = common.done_ids(peer_path), unhashed_questions(data, ds)
    added = 0
    for q in ds.items:
        if q.qid in rows and q.qid not in have:
            append_jsonl(peer_path, {**rows[q.qid], "restored_from": str(args.peer_from)})
            added += 1
    return added


def run_peer(args, ds, run_dir: Path) -> Path:
    work = args.work_dir or common.peers_home() / "work" / PEER
    work = work / f"{args.dataset}-{setting_tag(args)}"
    out = run_dir / "peer.jsonl"
    ids = [q.qid for q in ds.items]
    lines = common.read_jsonl(out)
    if {r["id"] for r in lines} >= set(ids) and all("expand_unpadded" in r or r.get("failed") for r in lines):
        return out  # (lines of an earlier worker lack expand_unpadded: the worker adds it, without the LLM)
    python = common.peer_python(PEER, args.peer_python)
    corpus, questions = write_inputs(ds, work)
    settings = work / "settings.json"

    def worker(url: str, *extra: str) -> None:
        settings.write_text(json.dumps(peer_settings(args, url, work), indent=1))
        common.run_worker(python, "vgr_worker.py", ["--corpus", corpus, "--questions", questions, "--settings", settings,
                                                    "--out", out, "--work-dir", work, "--top-k", "5", "--max-tokens", str(args.peer_max_tokens),
                                                    "--max-new", str(args.chunk), *extra], log=run_dir / "peer.log",
                          env=common.worker_env())

    worker("http://127.0.0.1:9/v1", "--index-only")  # embeddings and Milvus inserts: no server, no LLM
    if args.index_only:
        return out
    with common.llm_server(args.preset, run_dir / "server.log", base_url=args.base_url, n_ctx=args.n_ctx) as url:
        worker(url)
    return out


def run_ours(args) -> str:
    """Our side: notebook 03_vector_rerank on the same questions (a stopped run resumes from its records)."""
    tag = re.sub(r"[^A-Za-z0-9.]+", "-", args.embedder).strip("-")
    name = f"peers-vgr-{args.dataset}-n{args.limit}-s{args.seed}-{args.preset}-{args.structured or 'preset'}-{tag}"
    params = {"dataset": args.dataset, "split": "test", "limit": args.limit, "seed": args.seed, "llm_preset": args.preset,
              "llm_structured": args.structured, "variants": ["all"], "embedder": args.embedder}
    return common.run_ours("03_vector_rerank", params, [], name)


def _complete(run: str, ds) -> bool:
    from kgrag_utils import settings
    from kgrag_utils.records import read_examples

    have = {r["id"] for r in read_examples(settings.results_dir() / run / "examples.jsonl")[0]}
    return have >= {q.qid for q in ds.items}


def score(args, ds, peer_path: Path, ours_run: str, version: str, ids: list[str] | None = None) -> list[dict]:
    from kgrag_utils import settings
    from kgrag_utils.metrics import recall_at_k
    from kgrag_utils.records import read_examples

    ours, _ = read_examples(settings.results_dir() / ours_run / "examples.jsonl")
    ours, peer = common.by_id(ours), common.by_id(common.read_jsonl(peer_path))
    ids = ids or [q.qid for q in ds.items]
    common.require_all(ids, ours, "ours", "run this script again (add --sides ours)")
    common.require_all(ids, peer, "the peer", "run this script again (add --sides peer)")
    gold = {q.qid: list(q.supporting) for q in ds.items}
    extra = {} if len(ids) == len(ds.items) else {"subset": f"the first {len(ids)} of the seeded {len(ds.items)}",
                                                  "partial": True}
    structured = (json.loads((settings.results_dir() / ours_run / "run.json").read_text()).get("params") or {}).get(
        "llm_structured") or "preset default"
    rows = []
    for ours_variant, peer_key, peer_label in PAIRS:
        for k in KS:
            o = [recall_at_k((ours[i]["variants"].get(ours_variant) or {}).get("passages"), gold[i], k) for i in ids]
            p = [0.0 if peer[i].get("failed") else recall_at_k(peer[i].get(peer_key), gold[i], k) for i in ids]
            rows.append(common.score_row(
                PEER, version, args.dataset, LLM_LABEL.format(preset=args.preset), f"recall@{k}",
                f"{ours_variant} (vector_rerank defaults, embedder {args.embedder}, structured={structured}, run {ours_run})",
                f"{peer_label} (Settings {setting_tag(args)}, final_top_k=5{cap_label(args)})", o, p,
                peer_failed=sum(bool(peer[i].get("failed")) for i in ids), **extra))
    return rows


def peer_version(args) -> str | None:
    """The installed package's version; with --peer-from, the one that wrote the file (no peer environment needed)."""
    if args.peer_from:
        return json.loads(Path(args.peer_from).read_text(encoding="utf-8"))["peer_version"]
    return common.peer_versions(common.peer_python(PEER, args.peer_python), [PEER])[PEER]


def main(argv=None) -> int:
    args = parse_args(argv)
    from kgrag_utils import settings
    from kgrag_utils.datasets import load_dataset

    ds = load_dataset(args.dataset, split="test", limit=args.limit, seed=args.seed)
    run_dir = settings.results_dir() / "peers" / f"{PEER}-{args.dataset}-n{len(ds.items)}-{setting_tag(args)}"
    run_dir.mkdir(parents=True, exist_ok=True)
    sides = set(args.sides.split(","))
    t0 = time.perf_counter()
    if args.peer_from is not None:
        print(f"peer: {restore_peer(args, ds, run_dir / 'peer.jsonl')} questions restored from {args.peer_from}",
              flush=True)
    computes_peer = ("peer" in sides or args.index_only) and not args.outcomes_only
    peer_path = run_peer(args, ds, run_dir) if computes_peer else run_dir / "peer.jsonl"
    if args.index_only:
        return 0
    if computes_peer or args.outcomes_only:  # the committed record of the peer's passages, partial or complete
        from kgrag_utils.records import write_result

        version = peer_version(args)
        print(f"wrote {write_result(outcomes_path(args, len(ds.items)), outcomes(args, ds, peer_path, version), args)}")
    if args.outcomes_only:
        return 0
    ours_run = run_ours(args) if "ours" in sides else None
    peer_done = len(common.done_ids(peer_path) & {q.qid for q in ds.items})
    print(f"peer: {peer_done}/{len(ds.items)} questions in {peer_path} ({time.perf_counter() - t0:.0f} s)", flush=True)
    ours_done = ours_run is not None and _complete(ours_run, ds)
    have = common.done_ids(peer_path)
    answered = [q.qid for q in ds.items if q.qid in have]
    complete = len(answered) == len(ds.items)
    first_n = bool(answered) and answered == [q.qid for q in ds.items[: len(answered)]]  # it answers in seeded order
    if not ours_done or not (complete or (args.partial and first_n)):
        print("not complete yet: run the same command again", flush=True)
        return 0
    answered = None if complete else answered
    version = peer_version(args)
    if answered and args.out == common.RESULTS_FILE:
        raise SystemExit("--partial: give another --out (e.g. benchmarks/results/peers_vgr_partial.json); peers.json "
                         "holds complete runs only")
    rows = score(args, ds, peer_path, ours_run, version or "?", ids=answered)
    note = {f"{PEER}/{args.dataset}/{setting_tag(args)}": {
        "peer_records": str(peer_path), "ours_run": ours_run, "llm": f"{args.preset} (packaged GGUF; peer: llama.cpp "
        "OpenAI-compatible server, ours: llama.cpp in-process), greedy", "created": time.strftime("%Y-%m-%dT%H:%M:%S%z")}}
    print(f"wrote {common.merge_rows(rows, args.out, note)}: " + ("complete" if complete else f"{rows[0]['subset']}"))
    for r in rows:
        print(f"{r['metric']:>9}  ours {r['ours']:.3f}  peer {r['peer_score']:.3f}  {r['ours_variant'][:40]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
