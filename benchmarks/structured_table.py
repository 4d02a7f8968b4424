"""The decoding-mode comparison table (issue 13) from SimGRAG end-to-end runs: one row per (hop, model, mode).

    python benchmarks/structured_table.py --results benchmarks/results/simgrag_e2e_metaqa-1hop_1.5b_off.json,... \
        --out benchmarks/results/structured_decoding_simgrag.json

Reads the benchmark JSONs of benchmarks/simgrag_e2e.py (dataset, model, decoding mode, settings) and the
run records they name (results/<run>/examples.jsonl):
per stage, how many replies could not be parsed or validated (pattern: no usable pattern; answer: an
answer call whose reply gave no answer), how many were cut by the token limit, strict / lenient Hits@1
on all and on the answerable questions, wrong answers by stage, tokens and LLM seconds per question.
Prints a markdown table and writes the rows as JSON.

    python benchmarks/structured_table.py --compact compact-metaqa-2hop-100-0.5b-off,... \
        --out benchmarks/results/structured_decoding_compact.json

With `--compact`, the rows come from compact relation-selection runs (notebook 02; run folders under results/):
per context (compact, top-k), the reader's strict and lenient Hits@1 on all and answerable questions, replies that
gave no answer, replies cut by the token limit, prompt tokens and LLM seconds per question.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

from kgrag_utils import settings
from kgrag_utils.records import EXAMPLES_FILE, read_examples, read_run, write_result


def _examples(run: str) -> list[dict]:
    """A run's examples, once per id (the last record wins, torn lines skipped: `records.read_examples`)."""
    return read_examples(settings.results_dir() / run / EXAMPLES_FILE)[0]


def _records(result: Path) -> tuple[dict, list[dict]]:
    meta = json.loads(Path(result).read_text(encoding="utf-8"))
    return meta, _examples(meta["run"])


def _cut(rec: dict, stage: str, params: dict) -> bool:
    """Cut by the token limit: the recorded finish reason, or (older records) completion tokens at the limit."""
    if rec.get(f"{stage}_finish") is not None:
        return rec[f"{stage}_finish"] == "length"
    limit = params.get(f"{stage}_max_new_tokens") or params.get(f"{stage}_max_tokens")
    done = (rec.get("tokens") or {}).get(f"{stage}_completion")
    return bool(limit) and done is not None and int(done) >= int(limit)


def decoding_label(params: dict) -> str:
    """The decoding mode as tables show it: off (free text, the paper's), schema, or schema+anchor (schema mode with
    SimGRAG's anchored pattern schema: the first triple names the question's [marked] entity); +relvocab: the pattern's
    relations constrained to the KG's relation names (SimGRAG's relation_vocabulary)."""
    mode = params.get("llm_structured") or "off"
    if mode != "schema":
        return mode
    return mode + ("+anchor" if params.get("anchor_entity") else "") + ("+relvocab" if params.get("relation_vocabulary") else "")


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
        "run": run, "dataset": p.get("dataset"), "model": p.get("llm_preset"), "decoding": decoding_label(p),
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


def _run_folder(run: str) -> tuple[dict, list[dict]]:
    return read_run(settings.results_dir() / run), _examples(run)


def compact_row(run: str) -> dict:
    """One compact run: the reader on the compact context and on the top-k baseline, same questions."""
    meta, recs = _run_folder(run)
    p = meta.get("params", {})
    ans = [r for r in recs if r.get("answerable")]

    def mean(xs):
        xs = [float(x) for x in xs if x is not None and x == x]
        return round(100 * float(np.mean(xs)), 1) if xs else None

    out = {"run": run, "status": meta.get("status"), "dataset": p.get("dataset"), "model": p.get("llm_preset"),
           "decoding": decoding_label(p), "n": len(recs), "n_answerable": len(ans)}
    for ctx in ("compact", "topk"):
        called = [r for r in recs if r.get(f"llm_{ctx}") is not None]
        out[ctx] = {
            "calls": len(called),
            "no_answer": sum(1 for r in called if not r.get(f"answer_{ctx}")),
            "failed": sum(1 for r in recs if r.get(f"failed_{ctx}")),
            "cut_by_limit": sum(1 for r in called if r.get(f"finish_{ctx}") == "length"),
            "hits1_strict_all": mean([r.get(f"hits@1_{ctx}") for r in recs]),
            "hits1_lenient_all": mean([r.get(f"containment_{ctx}") for r in recs]),
            "hits1_strict_answerable": mean([r.get(f"hits@1_{ctx}") for r in ans]),
            "hits1_lenient_answerable": mean([r.get(f"containment_{ctx}") for r in ans]),
            "hits1_gated_all": mean([r.get(f"hits@1_{ctx}_gated") for r in recs]),
            "prompt_tokens_per_question": round(float(np.mean([r.get(f"prompt_tokens_{ctx}") or 0 for r in called])), 1)
            if called else None,
            # the reader call's seconds (records from after the method protocol, part 2); cached calls left out
            "llm_s_per_question": (lambda xs: round(float(np.mean(xs)), 2) if xs else None)(
                [r[f"seconds_{ctx}"] for r in called if r.get(f"seconds_{ctx}") is not None and not r.get(f"cached_{ctx}")]),
            "completion_tokens_per_question": round(float(np.mean([r.get(f"completion_tokens_{ctx}") or 0
                                                                   for r in called])), 1) if called else None,
        }
    return out


def compact_main(runs: list[str], out: Path | None) -> int:
    rows = [compact_row(r) for r in runs]
    print("| dataset | model | decoding | n | context | strict Hits@1 all | lenient all | strict / lenient answerable (n) "
          "| gated all | no answer (cut) / calls | prompt tokens / q |")
    print("|" + "---|" * 11)
    for x in rows:
        for ctx in ("compact", "topk"):
            c = x[ctx]
            print(f"| {x['dataset']} | {x['model']} | {x['decoding']} | {x['n']} | {ctx} | {c['hits1_strict_all']} "
                  f"| {c['hits1_lenient_all']} | {c['hits1_strict_answerable']} / {c['hits1_lenient_answerable']} "
                  f"({x['n_answerable']}) | {c['hits1_gated_all']} | {c['no_answer']} ({c['cut_by_limit']}) / {c['calls']} "
                  f"| {c['prompt_tokens_per_question']} |")
    if out is not None:
        write_result(out, {"benchmark": "structured_decoding_compact", "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
                           "metric_note": "strict Hits@1: the reader's first parsed answer equals a gold answer; lenient: "
                                          "a gold answer is contained in the raw reply; gated: the derived answer where "
                                          "the gate passes, else the reader's; compact = the selected relation paths' "
                                          "facts, topk = the baseline's top-k facts (100) for the same question; no answer "
                                          "= a reply that gave no answer; cut = finish_reason length",
                           "rows": rows})
    return 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--results", default="", help="comma list of simgrag_e2e.py JSON files")
    ap.add_argument("--compact", default="", help="comma list of compact run names (folders under results/)")
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args(argv)
    if args.compact:
        return compact_main([r for r in args.compact.split(",") if r], args.out)
    if not args.results:
        ap.error("give --results or --compact")
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
