"""The decoding-mode comparison table (issue 13) from SimGRAG end-to-end runs: one row per (hop, model, mode).

    python benchmarks/structured_table.py --results benchmarks/results/simgrag_e2e_metaqa-1hop_1.5b_off.json,... \
        --out benchmarks/results/structured_decoding_simgrag.json

Reads the benchmark JSONs of benchmarks/simgrag_e2e.py (dataset, model, decoding mode, settings) and the
run records they name (results/<run>/examples.jsonl):
per stage, how many replies could not be parsed or validated (pattern: no usable pattern; answer: an
answer call whose reply gave no answer), how many were cut by the token limit, strict / lenient Hits@1
on all and on the answerable questions, wrong answers by stage, tokens and LLM seconds per question.
Prints a markdown table and writes the rows as JSON.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

from kgrag_utils import settings
from kgrag_utils.records import write_result


def _records(result: Path) -> tuple[dict, list[dict]]:
    meta = json.loads(Path(result).read_text(encoding="utf-8"))
    folder = settings.results_dir() / meta["run"]
    recs = {}
    for line in (folder / "examples.jsonl").read_text(encoding="utf-8").splitlines():
        try:
            r = json.loads(line)
        except json.JSONDecodeError:
            continue
        recs[r["id"]] = r
    return meta, list(recs.values())


def _cut(rec: dict, stage: str, params: dict) -> bool:
    """Cut by the token limit: the recorded finish reason, or (older records) completion tokens at the limit."""
    if rec.get(f"{stage}_finish") is not None:
        return rec[f"{stage}_finish"] == "length"
    limit = params.get(f"{stage}_max_new_tokens") or params.get(f"{stage}_max_tokens")
    done = (rec.get("tokens") or {}).get(f"{stage}_completion")
    return bool(limit) and done is not None and int(done) >= int(limit)


def row(result: Path) -> dict:
    meta, recs = _records(result)
    run = meta["run"]
    p = {**meta.get("settings", {}), "dataset": meta["dataset"], "llm_preset": meta["llm"]["preset"],
         "llm_structured": meta["llm"].get("structured") or "off"}
    n = len(recs)
    answered = [r for r in recs if r.get("answer_raw") is not None]
    ans = [r for r in recs if r.get("answerable")]

    def mean(xs):
        xs = [x for x in xs if x == x]
        return round(100 * float(np.mean(xs)), 1) if xs else None

    stage = {s: sum(1 for r in recs if r.get("failed_stage") == s) for s in ("pattern", "retrieval", "generation")}
    llm_s = [(r.get("timings") or {}).get("pattern_s", 0.0) + (r.get("timings") or {}).get("answer_s", 0.0)
             for r in recs if not (r.get("tokens") or {}).get("pattern_cached")]
    tok = [sum(v for k, v in (r.get("tokens") or {}).items() if isinstance(v, int) and not isinstance(v, bool))
           for r in recs]
    return {
        "run": run, "dataset": p.get("dataset"), "model": p.get("llm_preset"), "decoding": p.get("llm_structured", "off"),
        "injective": p.get("injective"), "n": n, "n_answerable": len(ans),
        "pattern_unusable": sum(1 for r in recs if not r.get("pattern_ok")),
        "pattern_cut_by_limit": sum(1 for r in recs if _cut(r, "pattern", p)),
        "answer_calls": len(answered),
        "answer_unparsed": sum(1 for r in answered if not r.get("answers")),
        "answer_cut_by_limit": sum(1 for r in answered if _cut(r, "answer", p)),
        "hits1_strict_all": mean([r["hits@1"] for r in recs]),
        "hits1_lenient_all": mean([r["containment"] for r in recs]),
        "hits1_strict_answerable": mean([r["hits@1"] for r in ans]),
        "hits1_lenient_answerable": mean([r["containment"] for r in ans]),
        "wrong_by_stage_strict": stage,
        "tokens_per_question": round(float(np.mean(tok)), 1) if tok else None,
        "llm_s_per_question": round(float(np.mean(llm_s)), 1) if llm_s else None,
        "n_timed": len(llm_s),
    }


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--results", required=True, help="comma list of simgrag_e2e.py JSON files")
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args(argv)
    rows = [row(Path(r)) for r in args.results.split(",") if r]
    head = ("| dataset | model | decoding | n | pattern unusable (cut) | answer unparsed (cut) / calls | strict Hits@1 all "
            "| lenient all | strict / lenient answerable (n) | wrong by stage P/R/G | tokens/q | LLM s/q |")
    print(head)
    print("|" + "---|" * 12)
    for x in rows:
        w = x["wrong_by_stage_strict"]
        print(f"| {x['dataset']} | {x['model']} | {x['decoding']} | {x['n']} | {x['pattern_unusable']} ({x['pattern_cut_by_limit']}) "
              f"| {x['answer_unparsed']} ({x['answer_cut_by_limit']}) / {x['answer_calls']} | {x['hits1_strict_all']} "
              f"| {x['hits1_lenient_all']} | {x['hits1_strict_answerable']} / {x['hits1_lenient_answerable']} ({x['n_answerable']}) "
              f"| {w['pattern']} / {w['retrieval']} / {w['generation']} | {x['tokens_per_question']} | {x['llm_s_per_question']} |")
    if args.out is not None:
        write_result(args.out, {"benchmark": "structured_decoding_simgrag", "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
                                "metric_note": "strict Hits@1: the first parsed answer equals a gold answer; lenient: a gold "
                                               "answer is contained in the raw reply; failures count as wrong; pattern "
                                               "unusable = no parsable or valid pattern; answer unparsed = an answer call "
                                               "whose reply gave no answer; cut = finish_reason length",
                                "rows": rows})
    return 0


if __name__ == "__main__":
    sys.exit(main())
