"""vector-graph-rag 0.4.0 (Milvus' implementation) beside our vector rerank: same questions, embedder, LLM.

    benchmarks/peers/setup.sh vector-graph-rag                  # once: its own environment
    python benchmarks/peers/vgr.py --index-only                 # once: the peer's index, no LLM (outside the lock)
    flock /tmp/kgrag-llm.lock python benchmarks/peers/vgr.py --chunk 50    # repeat until it says "complete"
    python benchmarks/peers/vgr.py --sides ours --peer-from benchmarks/results/peers_vgr_musique_n100.json
                                   # ours again against the committed peer outcomes (no peer, no peer environment)

The peer (vgr_worker.py) gets the MuSiQue corpus with the released OpenIE triples, the packaged MiniLM through
its HuggingFace provider and the packaged GGUF through llama.cpp's server; its knobs are its defaults except
`final_top_k` 5 and `--peer-setting`, and its calls get a reply budget of `--peer-max-tokens` (it sets none).
Our side is notebooks/03_vector_rerank.ipynb on the same seeded questions with the same MiniLM read to 512 word
pieces (`--embedder minilm@512`, as the peer's provider reads). Rows (Recall@2 / @5 of each pair in PAIRS) go
to peers.json; the peer's passage ids per question to peers_vgr_<dataset>_n<N>.json beside it (docs/PEERS.md).
"""

from __future__ import annotations

import hashlib
import json
import os
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
# what the outcomes file keeps of each peer line: the passage lists the rows score, and stage counts (no texts)
OUTCOME_KEYS = tuple(key for _, key, _ in PAIRS) + ("failed", "n_candidates")


def parse_args(argv=None):
    ap = common.harness_args(__doc__, "musique", 100, n_ctx=16384)
    ap.add_argument("--structured", default="", choices=("", "off", "schema"),
                    help="our side's decoding mode ('' = the preset's default)")
    ap.add_argument("--embedder", default=OURS_EMBEDDER,
                    help="our side's embedder; the default reads 512 word pieces, as the peer's provider does "
                         "('minilm' cuts at MiniLM's configured 256: benchmarks/peers/vgr_naive_trace.py)")
    ap.add_argument("--peer-setting", action="append", default=[], metavar="KEY=VALUE",
                    help="a vector_graph_rag Settings override (JSON value), e.g. relation_number_threshold=40")
    ap.add_argument("--peer-max-tokens", type=int, default=PEER_MAX_TOKENS,
                    help="reply budget of the peer's LLM calls, which set none (0: unbounded, up to the context)")
    ap.add_argument("--peer-from", type=Path, default=None,
                    help="a peer outcomes file an earlier run wrote (peers_vgr_<dataset>_n<N>.json beside --out): "
                         "its questions' passage lists come from it instead of the peer (the rest are computed)")
    return ap.parse_args(argv)


def peer_settings(args, url: str, work: Path) -> dict:
    s = {"openai_base_url": url, "openai_api_key": "not-needed", "llm_model": args.preset,
         "embedding_provider": "huggingface", "embedding_model": str(common.minilm_dir()), "embedding_dimension": 384,
         "milvus_uri": str(work / "vgr.db"), "final_top_k": 5, "ner_cache_dir": None, "use_llm_cache": True}
    for kv in args.peer_setting:
        key, _, value = kv.partition("=")
        s[key] = json.loads(value)
    return s


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
    questions.write_text("".join(json.dumps({"id": q.qid, "question": q.question}) + "\n" for q in ds.items),
                         encoding="utf-8")
    return corpus, questions


def outcomes_file(dataset: str, n: int, out: str | Path = common.RESULTS_FILE) -> Path:
    """Where the peer outcomes file of `dataset` with n questions lives: beside the rows file `out`."""
    out = Path(out) if Path(out).is_absolute() else common.REPO / out
    return out.parent / f"peers_vgr_{dataset}_n{n}.json"


def _pid_key(pid: str) -> str:
    """A passage id as the outcomes file holds it: a short hash, so that no passage title is committed."""
    return hashlib.sha1(str(pid).encode("utf-8")).hexdigest()[:12]


def unhashed_questions(data: dict, ds) -> dict:
    """An outcomes file's questions by id, their passage lists mapped back to this corpus's passage ids."""
    pids = {_pid_key(p.pid): p.pid for p in ds.corpus}
    return {r["id"]: {k: [pids[h] for h in v] if k in OUTCOME_KEYS and isinstance(v, list) else v
                      for k, v in r.items()} for r in data["questions"]}


def outcomes(args, ds, peer_path: Path, version: str) -> dict:
    """The peer's per-question passage ids so far, in the seeded order (committed: a later run restores them)."""
    peer = common.by_id(common.read_jsonl(peer_path))
    done = [q for q in ds.items if q.qid in peer]
    calls = [c for q in done for c in peer[q.qid].get("llm_calls") or []]
    hashed = lambda row: {k: ([_pid_key(p) for p in row[k]] if isinstance(row[k], list) else row[k])  # noqa: E731
                          for k in OUTCOME_KEYS if k in row}
    return {"benchmark": "peers_vgr", "peer": PEER, "peer_version": version, "dataset": args.dataset,
            "limit": args.limit, "seed": args.seed, "preset": args.preset, "setting": setting_tag(args),
            "peer_max_tokens": args.peer_max_tokens, "n_planned": len(ds.items), "n_done": len(done),
            "complete": len(done) == len(ds.items),
            "llm_calls": {"n": len(calls), "hit_the_budget": sum(c.get("finish") == "length" for c in calls)},
            "about": "vector-graph-rag's passage ids per question and list (naive, padded, rerank, expand_unpadded), "
                     "the number of candidate relations, and failed; benchmarks/peers/vgr.py --peer-from reads it "
                     "(a partial file: its questions are restored, the rest computed)",
            "passage_ids": "sha1(pid)[:12]: the restoring run maps them back through its own corpus",
            "questions": [{"id": q.qid, **hashed(peer[q.qid])} for q in done]}


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
    added = [q.qid for q in ds.items if q.qid in rows and q.qid not in have]
    for qid in added:
        append_jsonl(peer_path, {**rows[qid], "restored_from": str(args.peer_from)})
    return len(added)


def run_peer(args, ds, run_dir: Path) -> Path:
    work = common.work_dir(args, PEER) / f"{args.dataset}-{setting_tag(args)}"
    out = run_dir / "peer.jsonl"
    if common.done_ids(out) >= {q.qid for q in ds.items}:
        return out
    python = common.peer_python(PEER, args.peer_python)
    corpus, questions = write_inputs(ds, work)
    settings = work / "settings.json"

    def worker(url: str, *extra: str) -> None:
        settings.write_text(json.dumps(peer_settings(args, url, work), indent=1))
        common.run_worker(python, "vgr_worker.py", [
            "--corpus", corpus, "--questions", questions, "--settings", settings, "--out", out, "--work-dir", work,
            "--top-k", "5", "--max-tokens", str(args.peer_max_tokens), "--max-new", str(args.chunk), *extra],
            log=run_dir / "peer.log")

    worker("http://127.0.0.1:9/v1", "--index-only")  # embeddings and Milvus inserts: no server, no LLM
    if not args.index_only:
        with common.llm_server(args.preset, run_dir / "server.log", base_url=args.base_url, n_ctx=args.n_ctx) as url:
            worker(url)
    return out


def run_ours(args) -> str:
    """Our side: notebook 03_vector_rerank on the same questions (a stopped run resumes from its records)."""
    name = (f"peers-vgr-{args.dataset}-n{args.limit}-s{args.seed}-{args.preset}-{args.structured or 'preset'}-"
            f"{common.run_tag(args.embedder)}")
    params = {"dataset": args.dataset, "split": "test", "limit": args.limit, "seed": args.seed, "llm_preset": args.preset,
              "llm_structured": args.structured, "variants": ["all"], "embedder": args.embedder}
    return common.run_ours("03_vector_rerank", params, [], name)


def score(args, ds, peer: dict, ours: dict, ours_run: str, version: str) -> list[dict]:
    from kgrag_utils import settings
    from kgrag_utils.metrics import recall_at_k

    ids = [q.qid for q in ds.items]
    gold = {q.qid: list(q.supporting) for q in ds.items}
    structured = (json.loads((settings.results_dir() / ours_run / "run.json").read_text()).get("params") or {}).get(
        "llm_structured") or "preset default"
    cap = f", replies capped at {args.peer_max_tokens} tokens" if args.peer_max_tokens else ""
    return [common.score_row(
        PEER, version, args.dataset, LLM_LABEL.format(preset=args.preset), f"recall@{k}",
        f"{ours_variant} (vector_rerank defaults, embedder {args.embedder}, structured={structured}, run {ours_run})",
        f"{peer_label} (Settings {setting_tag(args)}, final_top_k=5{cap})",
        [recall_at_k((ours[i]["variants"].get(ours_variant) or {}).get("passages"), gold[i], k) for i in ids],
        [0.0 if peer[i].get("failed") else recall_at_k(peer[i].get(peer_key), gold[i], k) for i in ids],
        peer_failed=sum(bool(peer[i].get("failed")) for i in ids))
        for ours_variant, peer_key, peer_label in PAIRS for k in KS]


def peer_version(args) -> str | None:
    """The installed package's version; with --peer-from, the one that wrote the file (no peer environment needed)."""
    if args.peer_from:
        return json.loads(Path(args.peer_from).read_text(encoding="utf-8"))["peer_version"]
    return common.peer_versions(common.peer_python(PEER, args.peer_python), [PEER])[PEER]


def main(argv=None) -> int:
    args = parse_args(argv)
    from kgrag_utils import settings
    from kgrag_utils.datasets import load_dataset
    from kgrag_utils.records import read_examples, write_result

    ds = load_dataset(args.dataset, split="test", limit=args.limit, seed=args.seed)
    run_dir = settings.results_dir() / "peers" / f"{PEER}-{args.dataset}-n{len(ds.items)}-{setting_tag(args)}"
    run_dir.mkdir(parents=True, exist_ok=True)
    peer_path, sides, t0 = run_dir / "peer.jsonl", set(args.sides.split(",")), time.perf_counter()
    if args.peer_from is not None:
        print(f"peer: {restore_peer(args, ds, peer_path)} questions restored from {args.peer_from}", flush=True)
    if "peer" in sides or args.index_only:
        run_peer(args, ds, run_dir)
        if args.index_only:
            return 0
        outcomes_path = outcomes_file(args.dataset, len(ds.items), args.out)  # the committed record, partial or not
        print(f"wrote {write_result(outcomes_path, outcomes(args, ds, peer_path, peer_version(args)), args)}")
    peer = common.by_id(common.read_jsonl(peer_path))
    ids = [q.qid for q in ds.items]
    print(f"peer: {sum(i in peer for i in ids)}/{len(ids)} questions in {peer_path} ({time.perf_counter() - t0:.0f} s)",
          flush=True)
    ours_run = run_ours(args) if "ours" in sides else None
    ours = common.by_id(read_examples(settings.results_dir() / ours_run / "examples.jsonl")[0]) if ours_run else {}
    if not all(i in peer and i in ours for i in ids):
        print("not complete yet: run the same command again", flush=True)
        return 0
    rows = score(args, ds, peer, ours, ours_run, peer_version(args) or "?")
    note = {f"{PEER}/{args.dataset}/{setting_tag(args)}": {
        "peer_records": str(peer_path), "ours_run": ours_run, "llm": f"{args.preset} (packaged GGUF; peer: llama.cpp "
        "OpenAI-compatible server, ours: llama.cpp in-process), greedy", "created": time.strftime("%Y-%m-%dT%H:%M:%S%z")}}
    common.write_rows(rows, args.out, note)
    return 0


if __name__ == "__main__":
    sys.exit(main())
