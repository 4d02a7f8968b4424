"""Scores of the SimGRAG reference's per-question outputs and ours, side by side (benchmarks/peers/simgrag_ref.py).

Every score is per question, so both sides are compared on the same ids: our strict Hits@1 and
lenient containment (kgrag_utils.metrics), and the reference's own check (a gold answer is a
case-insensitive substring of the reply). compare.jsonl holds one line per question with both
sides' pattern, evidence, reply, scores and failing stage.
"""

from __future__ import annotations

import json
import re
import time
from pathlib import Path
from typing import Iterable

import common

PEER = "simgrag-ref"
REFERENCE = "YZ-Cai/SimGRAG"
SUBSETS = ("all", "answerable")
STAGES = ("pattern", "retrieval", "generation")


def reference_check(reply: str | None, golds: Iterable[str]) -> float:
    """The reference's answer check: some gold answer is a case-insensitive substring of the reply."""
    text = (reply or "").lower()
    return float(bool(reply) and any(g.lower() in text for g in golds))


def first_named(reply: str | None, names: Iterable[str], question: str) -> str | None:
    """The first name of the evidence that the reply mentions, skipping names the question already holds.

    The reference answers in prose ("According to graph [1], ..."), so its first answer is read as the
    first evidence entity the reply names (word boundaries, normalised text; at one position the
    longest name wins).
    """
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

    golds = list(q.answers)
    reply = rec.get("answer_llm_output")
    names = {x for g in rec.get("evidences") or [] for h, _r, t in g for x in (h, t)}
    first = first_named(reply, names, q.question)
    s = {"strict": hits_at_1([first] if first else [], golds), "lenient": containment(reply, golds) if reply else 0.0,
         "ref_check": float(bool(rec.get("correct")))}
    ok, hit, oracle = "query_graph" in rec, bool(rec.get("evidence_hit")), rec.get("oracle_evidence_hit")
    return {**s, "first_answer": first, "stage_strict": _stage(s["strict"], ok, hit, oracle),
            "stage_lenient": _stage(s["lenient"], ok, hit, oracle), "pattern_ok": ok, "evidence_hit": hit,
            "oracle_evidence_hit": oracle, "timed_out": any("time out" in e["message"] for e in rec.get("errors", []))}


def score_ours(rec: dict, q) -> dict:
    failed = bool(rec.get("failed")) and "hits@1" not in rec
    strict = 0.0 if failed else float(rec.get("hits@1") or 0.0)
    lenient = 0.0 if failed else float(rec.get("containment") or 0.0)
    return {"strict": strict, "lenient": lenient, "ref_check": reference_check(rec.get("answer_raw"), q.answers),
            "first_answer": (rec.get("answers") or [None])[0], "stage_strict": rec.get("failed_stage"),
            "stage_lenient": rec.get("failed_stage_lenient"), "pattern_ok": bool(rec.get("pattern_ok")),
            "evidence_hit": bool(rec.get("retrieval_hit")), "oracle_evidence_hit": rec.get("oracle_retrieval_hit")}


def _usage(rec: dict) -> dict:
    u = {"prompt_tokens": 0, "completion_tokens": 0, "llm_s": 0.0, "truncated": 0}
    for key in ("rewrite_llm", "answer_llm"):
        info = rec.get(key) or {}
        usage = info.get("usage") or {}
        u["prompt_tokens"] += usage.get("prompt_tokens") or 0
        u["completion_tokens"] += usage.get("completion_tokens") or 0
        u["llm_s"] += info.get("seconds") or 0.0
        u["truncated"] += info.get("finish_reason") == "length"
    return u


def _side_summary(scored: list[dict], usage: list[dict] | None = None) -> dict:
    out = {"n": len(scored)}
    for kind in ("strict", "lenient"):
        counts = {s: 0 for s in STAGES}
        for r in scored:
            if r[f"stage_{kind}"]:
                counts[r[f"stage_{kind}"]] += 1
        out[f"failed_stage_{kind}"] = counts
    out["pattern_parse_rate"] = round(sum(r["pattern_ok"] for r in scored) / max(1, len(scored)), 4)
    out["evidence_hit_rate"] = round(sum(r["evidence_hit"] for r in scored) / max(1, len(scored)), 4)
    if usage is not None:
        out["tokens"] = {k: sum(u[k] for u in usage) for k in ("prompt_tokens", "completion_tokens")}
        out["replies_cut_by_max_tokens"] = sum(u["truncated"] for u in usage)
        out["llm_s_per_question"] = round(sum(u["llm_s"] for u in usage) / max(1, len(usage)), 2)
        out["retrieval_timeouts"] = sum(bool(r.get("timed_out")) for r in scored)
    return out


def report(args, ds, run_dir: Path, ours_run: str) -> int:
    from kgrag_utils import settings
    from kgrag_utils.records import read_examples

    ids = [q.qid for q in ds.items]
    peer = peer_records(run_dir)
    ours = common.by_id(read_examples(settings.results_dir() / ours_run / "examples.jsonl")[0]) \
        if (settings.results_dir() / ours_run / "examples.jsonl").exists() else {}
    peer_done = [i for i in ids if "answered" in peer.get(i, {})]
    ours_done = [i for i in ids if i in ours]
    print(f"{args.dataset}: reference {len(peer_done)}/{len(ids)} answered, ours {len(ours_done)}/{len(ids)} "
          f"(peer records {run_dir}, ours results/{ours_run})", flush=True)
    if len(peer_done) < len(ids) or len(ours_done) < len(ids):
        print("not complete yet: run the same command again", flush=True)
        return 0
    qs = {q.qid: q for q in ds.items}
    sp = {i: score_peer(peer[i], qs[i]) for i in ids}
    so = {i: score_ours(ours[i], qs[i]) for i in ids}
    with open(run_dir / "compare.jsonl", "w", encoding="utf-8") as f:
        for i in ids:
            p, o = peer[i], ours[i]
            f.write(json.dumps({
                "id": i, "question": qs[i].question, "golds": list(qs[i].answers), "answerable": qs[i].answerable,
                "qtype": qs[i].qtype,
                "ours": {**so[i], "pattern_raw": o.get("pattern_raw"), "evidence": o.get("evidence"),
                         "answer_raw": o.get("answer_raw")},
                "peer": {**sp[i], "rewrite_llm_output": p.get("rewrite_llm_output"), "query_graph": p.get("query_graph"),
                         "evidences": p.get("evidences"), "answer_llm_output": p.get("answer_llm_output"),
                         "errors": p.get("errors")},
            }, ensure_ascii=False, default=str) + "\n")
    run = json.loads((settings.results_dir() / ours_run / "run.json").read_text())
    p = run.get("params") or {}
    demos = (f"demos=nearest ({p.get('shots')} chosen after {p.get('fixed_shots', 4)} fixed)" if p.get("demos") == "nearest"
             else f"demos=fixed, shots={p.get('shots')}")
    ours_variant = (f"01_simgrag run {ours_run}: structured={p.get('llm_structured')}, {demos}, "
                    f"answer_shots={p.get('answer_shots')}, anchor_entity={bool(p.get('anchor_entity'))}, "
                    f"top_k={p.get('top_k')}, time_limit_s={p.get('time_limit_s')}, pattern/answer max tokens "
                    f"{p.get('pattern_max_new_tokens')}/{p.get('answer_max_new_tokens')}")
    cfg = json.loads((Path(args.work_dir or common.peers_home() / "work" / PEER) / f"config-{args.dataset}.json")
                     .read_text())
    peer_variant = (f"reference pipeline @ {REFERENCE}: rewrite_shot={cfg['rewrite_shot']}, answer_shot="
                    f"{cfg['answer_shot']}, retriever {cfg['retriever']}, temperature 0, max_tokens {cfg['llm']['max_tokens']}")
    version = f"{REFERENCE} (commit {common.git_commit(args.reference_dir) or '?'})"
    llm = f"{args.preset} (packaged GGUF; ours llama.cpp in-process, reference llama.cpp OpenAI-compatible server), greedy"
    rows = []
    for subset in SUBSETS:
        keep = [i for i in ids if subset == "all" or qs[i].answerable]
        for metric, key in (("hits@1 (strict)", "strict"), ("containment (lenient)", "lenient"),
                            ("check_answer (reference's own scoring)", "ref_check")):
            rows.append(common.score_row(PEER, version, args.dataset, llm, metric, ours_variant, peer_variant,
                                         [so[i][key] for i in keep], [sp[i][key] for i in keep], subset=subset))
    usage = [_usage(peer[i]) for i in ids]
    note = {f"{PEER}/{args.dataset}": {
        "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "questions": f"first {args.take} of load_dataset("
        f"{args.dataset!r}, 'test', limit={args.limit}, seed={args.seed})", "ours_run": ours_run,
        "peer_records": str(run_dir), "compare": str(run_dir / "compare.jsonl"),
        "ours": _side_summary(list(so.values())), "peer": _side_summary(list(sp.values()), usage),
        "peer_config": {k: v for k, v in cfg.items() if k in ("retriever", "rewrite_shot", "answer_shot", "llm")},
        "strict_for_the_reference": "the first evidence entity (not named in the question) its reply mentions"}}
    print(f"wrote {common.merge_rows(rows, args.out, note)}: complete")
    for r in rows:
        print(f"{args.dataset} {r['subset']:>10} {r['metric'][:24]:>24}: ours {r['ours']:.3f}  reference {r['peer_score']:.3f}"
              f"  (n={r['n']})")
    return 0

