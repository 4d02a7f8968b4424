"""The SimGRAG reference code (YZ-Cai/SimGRAG) beside our SimGRAG: same MetaQA questions, embedder and LLM.

    benchmarks/peers/setup.sh simgrag-ref                          # once: its own environment
    git clone https://github.com/YZ-Cai/SimGRAG /work/peers/ref/SimGRAG && git -C /work/peers/ref/SimGRAG checkout dac7783
    flock /tmp/kgrag-llm.lock python benchmarks/peers/simgrag_ref.py --reference-dir /work/peers/ref/SimGRAG \\
        --dataset metaqa-2hop --chunk 50                         # repeat until it says "complete"

Questions: the first `--take` of the seeded `--limit` test sample that notebook 01_simgrag draws. The reference
runs its own MetaQA pipeline (simgrag_ref_worker.py) with the packaged MiniLM, Milvus Lite and the packaged GGUF
behind llama.cpp's server, greedy, `max_tokens` = our pattern budget. Our side is notebooks/01_simgrag.ipynb
(`--ours-param NAME=VALUE` sets more of its parameters, `--ours-run` scores an existing run). Scores and failure
stages below (`report`): per question on both sides, our strict Hits@1 (the reference answers in prose: its first
answer is the first evidence name, not in the question, its reply mentions) and lenient containment, the
reference's own check, and the failing stage; compare.jsonl holds both sides per question. docs/PEERS.md
explains every row.
"""

from __future__ import annotations

import json
import os
import re
import sys
import time
from pathlib import Path
from typing import Iterable

os.environ.setdefault("HF_HUB_OFFLINE", "1")
sys.path.insert(0, str(Path(__file__).resolve().parent))

import common  # noqa: E402

PEER = "simgrag-ref"
REFERENCE, REFERENCE_COMMIT = "YZ-Cai/SimGRAG", "dac7783"
STAGES = ("pattern", "retrieval", "generation")
METRICS = (("hits@1 (strict)", "strict"), ("containment (lenient)", "lenient"),
           ("check_answer (reference's own scoring)", "ref_check"))


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


# ----------------------------------------------------------------------------- scoring
def reference_check(reply: str | None, golds: Iterable[str]) -> float:
    """The reference's answer check: some gold answer is a case-insensitive substring of the reply."""
    text = (reply or "").lower()
    return float(bool(reply) and any(g.lower() in text for g in golds))


def first_named(reply: str | None, names: Iterable[str], question: str) -> str | None:
    """The first evidence name the reply mentions (word boundaries, normalised; at one position the longest),
    skipping names the question holds: the reference answers in prose ("According to graph [1], ...")."""
    from kgrag_utils.metrics import normalize_answer

    text, asked = normalize_answer(reply), normalize_answer(question)
    best = None
    for name in set(names):
        n = normalize_answer(name)
        if not n or re.search(rf"\b{re.escape(n)}\b", asked):
            continue
        m = re.search(rf"\b{re.escape(n)}\b", text)
        if m and (best is None or (m.start(), -len(n)) < (best[0], -len(best[1]))):
            best = (m.start(), n, name)
    return best[2] if best else None


def _stage(score: float, pattern_ok: bool, hit: bool, oracle_hit: bool | None) -> str | None:
    if score == 1.0:
        return None
    if not pattern_ok:
        return "pattern"
    if not hit:
        return "pattern" if oracle_hit else "retrieval"
    return "generation"


def peer_records(run_dir: Path) -> dict:
    """One merged record per question id from the reference's three stage files."""
    out: dict = {}
    for stage in ("rewrite", "retrieve", "answer"):
        for r in common.read_jsonl(run_dir / f"{stage}.jsonl"):
            rec = out.setdefault(r["id"], {})
            if "error_message" in r:
                rec.setdefault("errors", []).append({"stage": r.get("error_stage", stage), "message": r["error_message"]})
            rec.update({k: v for k, v in r.items() if k not in ("error_message", "error_stage")})
    return out


def score_peer(rec: dict, q) -> dict:
    from kgrag_utils.metrics import containment, hits_at_1

    golds, reply = list(q.answers), rec.get("answer_llm_output")
    first = first_named(reply, {x for g in rec.get("evidences") or [] for h, _r, t in g for x in (h, t)}, q.question)
    s = {"strict": hits_at_1([first] if first else [], golds), "lenient": containment(reply, golds) if reply else 0.0,
         "ref_check": float(bool(rec.get("correct")))}
    ok, hit, oracle = "query_graph" in rec, bool(rec.get("evidence_hit")), rec.get("oracle_evidence_hit")
    return {**s, "first_answer": first, "stage_strict": _stage(s["strict"], ok, hit, oracle),
            "stage_lenient": _stage(s["lenient"], ok, hit, oracle), "pattern_ok": ok, "evidence_hit": hit,
            "oracle_evidence_hit": oracle, "timed_out": any("time out" in e["message"] for e in rec.get("errors", []))}


def score_ours(rec: dict, q) -> dict:
    failed = bool(rec.get("failed")) and "hits@1" not in rec
    return {"strict": 0.0 if failed else float(rec.get("hits@1") or 0.0),
            "lenient": 0.0 if failed else float(rec.get("containment") or 0.0),
            "ref_check": reference_check(rec.get("answer_raw"), q.answers),
            "first_answer": (rec.get("answers") or [None])[0], "stage_strict": rec.get("failed_stage"),
            "stage_lenient": rec.get("failed_stage_lenient"), "pattern_ok": bool(rec.get("pattern_ok")),
            "evidence_hit": bool(rec.get("retrieval_hit")), "oracle_evidence_hit": rec.get("oracle_retrieval_hit")}


def _side_summary(scored: list[dict], peer: list[dict] | None = None) -> dict:
    """Failures by stage, parse and hit rates; for the reference also its LLM calls' tokens, cuts and time."""
    n = max(1, len(scored))
    out = {"n": len(scored), **{f"failed_stage_{kind}": {s: sum(r[f"stage_{kind}"] == s for r in scored) for s in STAGES}
                                for kind in ("strict", "lenient")},
           "pattern_parse_rate": round(sum(r["pattern_ok"] for r in scored) / n, 4),
           "evidence_hit_rate": round(sum(r["evidence_hit"] for r in scored) / n, 4)}
    if peer is not None:
        calls = [rec.get(key) or {} for rec in peer for key in ("rewrite_llm", "answer_llm")]
        out["tokens"] = {k: sum((c.get("usage") or {}).get(k) or 0 for c in calls)
                         for k in ("prompt_tokens", "completion_tokens")}
        out["replies_cut_by_max_tokens"] = sum(c.get("finish_reason") == "length" for c in calls)
        out["llm_s_per_question"] = round(sum(c.get("seconds") or 0.0 for c in calls) / max(1, len(peer)), 2)
        out["retrieval_timeouts"] = sum(bool(r.get("timed_out")) for r in scored)
    return out


def _variants(args, ours_run: str) -> tuple[str, str, dict]:
    """(our variant, the reference's variant, its config) as the rows name them."""
    from kgrag_utils import settings

    p = json.loads((settings.results_dir() / ours_run / "run.json").read_text()).get("params") or {}
    demos = (f"demos=nearest ({p.get('shots')} chosen after {p.get('fixed_shots', 4)} fixed)" if p.get("demos") == "nearest"
             else f"demos=fixed, shots={p.get('shots')}")
    ours = (f"01_simgrag run {ours_run}: structured={p.get('llm_structured')}, {demos}, "
            f"answer_shots={p.get('answer_shots')}, anchor_entity={bool(p.get('anchor_entity'))}, "
            f"top_k={p.get('top_k')}, time_limit_s={p.get('time_limit_s')}, pattern/answer max tokens "
            f"{p.get('pattern_max_new_tokens')}/{p.get('answer_max_new_tokens')}")
    cfg = json.loads((common.work_dir(args, PEER) / f"config-{args.dataset}.json").read_text())
    peer = (f"reference pipeline @ {REFERENCE}: rewrite_shot={cfg['rewrite_shot']}, answer_shot="
            f"{cfg['answer_shot']}, retriever {cfg['retriever']}, temperature 0, max_tokens {cfg['llm']['max_tokens']}")
    return ours, peer, cfg


def _compare_line(q, so: dict, sp: dict, o: dict, p: dict) -> str:
    return json.dumps({
        "id": q.qid, "question": q.question, "golds": list(q.answers), "answerable": q.answerable, "qtype": q.qtype,
        "ours": {**so, **{k: o.get(k) for k in ("pattern_raw", "evidence", "answer_raw")}},
        "peer": {**sp, **{k: p.get(k) for k in ("rewrite_llm_output", "query_graph", "evidences", "answer_llm_output",
                                                "errors")}}}, ensure_ascii=False, default=str) + "\n"


def report(args, ds, run_dir: Path, ours_run: str) -> int:
    from kgrag_utils import settings
    from kgrag_utils.records import read_examples

    ids = [q.qid for q in ds.items]
    peer = peer_records(run_dir)
    examples = settings.results_dir() / ours_run / "examples.jsonl"
    ours = common.by_id(read_examples(examples)[0]) if examples.exists() else {}
    peer_done, ours_done = sum("answered" in peer.get(i, {}) for i in ids), sum(i in ours for i in ids)
    print(f"{args.dataset}: reference {peer_done}/{len(ids)} answered, ours {ours_done}/{len(ids)} "
          f"(peer records {run_dir}, ours results/{ours_run})", flush=True)
    if peer_done < len(ids) or ours_done < len(ids):
        print("not complete yet: run the same command again", flush=True)
        return 0
    qs = {q.qid: q for q in ds.items}
    sp = {i: score_peer(peer[i], qs[i]) for i in ids}
    so = {i: score_ours(ours[i], qs[i]) for i in ids}
    with open(run_dir / "compare.jsonl", "w", encoding="utf-8") as f:
        f.writelines(_compare_line(qs[i], so[i], sp[i], ours[i], peer[i]) for i in ids)
    ours_variant, peer_variant, cfg = _variants(args, ours_run)
    version = common.reference_version(REFERENCE, args.reference_dir)
    llm = f"{args.preset} (packaged GGUF; ours llama.cpp in-process, reference llama.cpp OpenAI-compatible server), greedy"
    rows = []
    for subset in ("all", "answerable"):
        keep = [i for i in ids if subset == "all" or qs[i].answerable]
        rows += [common.score_row(PEER, version, args.dataset, llm, metric, ours_variant, peer_variant,
                                  [so[i][key] for i in keep], [sp[i][key] for i in keep], subset=subset)
                 for metric, key in METRICS]
    note = {f"{PEER}/{args.dataset}": {
        "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "questions": f"first {args.take} of load_dataset("
        f"{args.dataset!r}, 'test', limit={args.limit}, seed={args.seed})", "ours_run": ours_run,
        "peer_records": str(run_dir), "compare": str(run_dir / "compare.jsonl"),
        "ours": _side_summary(list(so.values())), "peer": _side_summary(list(sp.values()), [peer[i] for i in ids]),
        "peer_config": {k: v for k, v in cfg.items() if k in ("retriever", "rewrite_shot", "answer_shot", "llm")},
        "strict_for_the_reference": "the first evidence entity (not named in the question) its reply mentions"}}
    common.write_rows(rows, args.out, note)
    return 0


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
