"""The SimGRAG reference code (YZ-Cai/SimGRAG) beside our SimGRAG: same MetaQA questions, embedder and LLM.

    benchmarks/peers/setup.sh simgrag-ref                          # once: its own environment
    git clone https://github.com/YZ-Cai/SimGRAG /work/peers/ref/SimGRAG && git -C /work/peers/ref/SimGRAG checkout dac7783
    flock /tmp/kgrag-llm.lock python benchmarks/peers/simgrag_ref.py --reference-dir /work/peers/ref/SimGRAG \\
        --dataset metaqa-2hop --chunk 50                         # repeat until it says "complete"

Questions: the first `--take` of the seeded `--limit` test sample that notebook 01_simgrag draws. The reference
runs its own MetaQA pipeline (simgrag_ref_worker.py) with the packaged MiniLM, Milvus Lite and the packaged GGUF
behind llama.cpp's server, greedy, `max_tokens` = our pattern budget. Our side is notebooks/01_simgrag.ipynb
(`--ours-param NAME=VALUE` sets more of its parameters, `--ours-run` scores an existing run). Scores and failure
stages: simgrag_ref_score.py; what each row means: docs/PEERS.md.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
sys.path.insert(0, str(Path(__file__).resolve().parent))

import common  # noqa: E402
from simgrag_ref_score import PEER, report  # noqa: E402

REFERENCE_COMMIT = "dac7783"


def parse_args(argv=None):
    from kgrag_utils.methods.simgrag import SimGRAGConfig

    ap = common.harness_args(__doc__, "metaqa-1hop", 200, n_ctx=8192)
    ap.add_argument("--reference-dir", type=Path, required=True, help="a checkout of YZ-Cai/SimGRAG (commit dac7783)")
    ap.add_argument("--take", type=int, default=100, help="the first N of the seeded --limit sample")
    ap.add_argument("--max-tokens", type=int, default=SimGRAGConfig().pattern_max_new_tokens,
                    help="the reference's llm.max_tokens (one value for both calls); default: our pattern budget")
    ap.add_argument("--ours-param", action="append", default=[], metavar="NAME=VALUE",
                    help="a parameter of notebook 01_simgrag for our side (our setting), e.g. llm_structured=schema")
    ap.add_argument("--ours-run", default="", help="score an existing run of notebook 01_simgrag (its run_name) as our "
                    "side instead of running one; it must hold these questions and the same dataset, seed and preset")
    return ap.parse_args(argv)


def questions(args):
    from kgrag_utils.datasets import load_dataset

    ds = load_dataset(args.dataset, split="test", limit=args.limit, seed=args.seed)
    ds.items = ds.items[: args.take] if args.take else ds.items
    return ds


def oracle_graph(q) -> list[list[str]] | None:
    """The gold relation chain as a query graph in the reference's form (UNKNOWN nodes, relation words)."""
    if not q.chain or not q.topic_entities:
        return None
    nodes = [q.topic_entities[0]] + [f"UNKNOWN {i}" for i in range(1, len(q.chain) + 1)]
    out = []
    for i, step in enumerate(q.chain):
        rel, forward = (step[0], step[1]) if isinstance(step, (tuple, list)) else (step.relation, step.forward)
        h, t = (nodes[i], nodes[i + 1]) if forward else (nodes[i + 1], nodes[i])
        out.append([h, str(rel).replace("_", " "), t])
    return out


def kg_tag(ds) -> str:
    """One index per KG (MetaQA's 1/2/3-hop questions share one KB): its name and size."""
    return f"{ds.kg.name}-{ds.kg.num_entities}x{ds.kg.heads.size}"


def write_inputs(args, ds, work: Path, url: str) -> tuple[Path, Path]:
    """The reference's raw-data layout (kb.txt, the k-hop qa_test.txt of exactly these questions) and config."""
    hops = {q.hops for q in ds.items}
    if len(hops) != 1:
        raise SystemExit(f"{args.dataset}: questions of {sorted(hops)} hops; the reference runs one hop count at a time")
    hop = hops.pop()
    raw = work / f"raw-{kg_tag(ds)}"
    raw.mkdir(parents=True, exist_ok=True)
    kb = raw / "kb.txt"  # the loaded KG, in the reference's head|relation|tail lines (MetaQA: kb_reconstructed.txt)
    if not kb.exists():
        kg, tmp = ds.kg, kb.with_suffix(".tmp")
        with open(tmp, "w", encoding="utf-8") as f:
            for h, r, t in zip(kg.heads.tolist(), kg.rels.tolist(), kg.tails.tolist()):
                f.write(f"{kg.entity_names[h]}|{kg.relation_names[r]}|{kg.entity_names[t]}\n")
        tmp.replace(kb)
    qa = raw / ("1-hop/vanilla" if hop == 1 else f"{hop}-hop/{hop}-hop/vanilla") / "qa_test.txt"
    qa.parent.mkdir(parents=True, exist_ok=True)
    qa.write_text("".join(f"{q.question}\t{'|'.join(q.answers)}\n" for q in ds.items), encoding="utf-8")
    qfile = work / f"questions-{args.dataset}.jsonl"
    qfile.write_text("".join(json.dumps({"id": q.qid, "golds": list(q.answers), "oracle_graph": oracle_graph(q)}) + "\n"
                             for q in ds.items), encoding="utf-8")
    cfg = json.loads((args.reference_dir / "configs" / f"metaQA_{hop}hop.json").read_text())
    cfg.update({"raw_data_dir": str(raw), "processed_data_dir": str(work / f"processed-{kg_tag(ds)}-minilm"),
                "output_filename": str(work / f"unused-{args.dataset}.txt"),
                "embedding_model": {"model_path": str(common.minilm_dir()), "device": "cpu"}})
    cfg["llm"] = {**cfg["llm"], "model": args.preset, "base_url": url, "api_key": "not-needed", "temperature": 0.0,
                  "max_tokens": args.max_tokens}
    path = work / f"config-{args.dataset}.json"
    path.write_text(json.dumps(cfg, indent=1), encoding="utf-8")
    return path, qfile


def run_peer(args, ds, run_dir: Path) -> None:
    work = common.work_dir(args, PEER).resolve()
    python = common.peer_python(PEER, args.peer_python)
    ids = {q.qid for q in ds.items}

    def worker(url: str, stages: str) -> None:
        cfg, qfile = write_inputs(args, ds, work, url)
        common.run_worker(python, "simgrag_ref_worker.py", [
            "--reference-dir", args.reference_dir.resolve(), "--config", cfg, "--questions", qfile,
            "--out-dir", run_dir, "--milvus-uri", work / f"milvus-{kg_tag(ds)}-minilm.db", "--dim", "384",
            "--stages", stages, "--max-new", str(args.chunk)], log=run_dir / "peer.log")

    done = work / f"index-{kg_tag(ds)}-minilm.done"
    if not done.exists():  # the reference's Indexer over the whole KB, once per KG (no LLM)
        worker("http://127.0.0.1:9/v1", "index")
        done.write_text(time.strftime("%Y-%m-%dT%H:%M:%S%z"))
    if args.index_only or all(common.done_ids(run_dir / f"{s}.jsonl") >= ids for s in ("rewrite", "retrieve", "answer")):
        return
    with common.llm_server(args.preset, run_dir / "server.log", base_url=args.base_url, n_ctx=args.n_ctx) as url:
        worker(url, "rewrite,retrieve,answer")


def ours_run_name(args) -> str:
    tag = common.run_tag(" ".join(args.ours_param))
    return args.ours_run or (f"peers-simgrag-{args.dataset}-n{args.take}of{args.limit}-{args.preset}"
                             + (f"-{tag}" if tag else ""))


def check_ours_run(args) -> None:
    """An existing run given by --ours-run must be of the same questions' draw and model; else say so."""
    from kgrag_utils import settings

    run_json = settings.results_dir() / args.ours_run / "run.json"
    if not run_json.exists():
        raise SystemExit(f"--ours-run {args.ours_run}: no {run_json}; run `kgrag run 01_simgrag -p run_name="
                         f"{args.ours_run}` first (the same dataset, limit, seed and llm_preset)")
    params = json.loads(run_json.read_text()).get("params") or {}
    want = {"dataset": args.dataset, "limit": args.limit, "seed": args.seed, "llm_preset": args.preset}
    wrong = [f"{k}={params.get(k)!r}, not {v!r}" for k, v in want.items() if params.get(k) != v]
    if wrong:
        raise SystemExit(f"--ours-run {args.ours_run}: its {', '.join(wrong)}; pick a run of these questions")


def main(argv=None) -> int:
    args = parse_args(argv)
    from kgrag_utils import settings

    if not (args.reference_dir / "src" / "retriever.py").exists():
        raise SystemExit(f"{args.reference_dir} is not a SimGRAG checkout (no src/retriever.py): clone YZ-Cai/SimGRAG "
                         f"and check out {REFERENCE_COMMIT}")
    ds = questions(args)
    run_dir = (settings.results_dir() / "peers" /
               f"{PEER}-{args.dataset}-n{len(ds.items)}of{args.limit}-{args.preset}-max{args.max_tokens}")
    run_dir.mkdir(parents=True, exist_ok=True)
    sides = set(args.sides.split(","))
    if args.ours_run:
        check_ours_run(args)
    if "peer" in sides or args.index_only:
        run_peer(args, ds, run_dir)
    if args.index_only:
        return 0
    if "ours" in sides and not args.ours_run:  # an --ours-run is scored as it is
        common.run_ours("01_simgrag", {"dataset": args.dataset, "split": "test", "limit": args.limit, "seed": args.seed,
                                       "take": args.take, "llm_preset": args.preset}, args.ours_param,
                        ours_run_name(args))
    return report(args, ds, run_dir, ours_run_name(args))


if __name__ == "__main__":
    sys.exit(main())
