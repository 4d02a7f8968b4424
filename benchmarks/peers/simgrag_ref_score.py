"""Scores of the SimGRAG reference's per-question outputs and ours, side by side (benchmarks/peers/simgrag_ref.py).

Per question on both sides: our strict Hits@1 and lenient containment (kgrag_utils.metrics), the reference's own
check, and the failing stage. compare.jsonl holds one line per question with both sides' pattern, evidence, reply,
scores and stage.
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
STAGES = ("pattern", "retrieval", "generation")
METRICS = (("hits@1 (strict)", "strict"), ("containment (lenient)", "lenient"),
           ("check_answer (reference's own scoring)", "ref_check"))


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
