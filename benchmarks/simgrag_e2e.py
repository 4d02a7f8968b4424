"""SimGRAG end to end with a packaged LLM: pattern (LLM) -> top-k subgraphs by GSD -> answer (LLM).

    flock /tmp/kgrag_llm.lock nice -n 5 python benchmarks/simgrag_e2e.py --dataset metaqa-1hop --limit 100 \
        --out benchmarks/results/simgrag_e2e_metaqa-1hop.json

The same pipeline as notebooks/01_simgrag.ipynb (SimGRAG.run over a seeded sample), without the
figures. Every record goes through a RunRecorder (results/<run name>/examples.jsonl), so a killed run
resumes where it stopped, and every LLM call goes through the persistent response cache. The JSON
reports the pattern parse rate, strict Hits@1 and lenient containment (all questions and the
answerable subset; failures count as wrong), wrong answers by failing stage, tokens, and seconds per
question (this session's wall clock, and the LLM seconds of the calls that were not cache hits).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path

import numpy as np

from kgrag_utils import settings
from kgrag_utils.metrics import wilson_interval
from kgrag_utils.provenance import per_question
from kgrag_utils.records import write_result
from kgrag_utils.methods.simgrag.stages.gsd_search import GSDRetriever
from kgrag_utils.methods.simgrag import SimGRAG, SimGRAGConfig, summarize
from kgrag_utils.methods.simgrag.stages.replay import replay_gold_llm
from kgrag_utils.methods.simgrag.stages.demos import own_type_counts, requested_answer_demos, requested_demos

#: the 1.5B's prompt processing speed on the 2-core development machine (docs/MODELS.md#what-we-measured-on-the-cpu-models)
PREFILL_TOK_S = 100.0


def seconds_per_question(records: list[dict]) -> dict:
    """LLM seconds per question over the questions whose LLM calls were all computed (not cache hits)."""
    fresh = [r for r in records if not (r.get("tokens") or {}).get("pattern_cached")
             and not (r.get("tokens") or {}).get("answer_cached")]
    llm_s = [(r.get("timings") or {}).get("pattern_s", 0.0) + (r.get("timings") or {}).get("answer_s", 0.0)
             for r in fresh]
    retrieval_ms = [sum((r.get("timings") or {}).get(k, 0.0) for k in ("encode_ms", "node_search_ms", "relation_ms",
                                                                          "enumerate_ms")) for r in records]
    return {"llm_s_per_uncached_question": round(float(np.mean(llm_s)), 2) if llm_s else None,
            "n_uncached_questions": len(fresh),
            "retrieval_ms_per_question_median": round(float(np.median(retrieval_ms)), 3) if retrieval_ms else None}


def first_computation_seconds(records: list[dict], earlier_run: Path) -> dict:
    """LLM seconds per question as measured when cached responses were first computed.

    The response cache keeps texts and token counts, not times, so a rerun served from it reports 0 s.
    An earlier run record of the same prompts (its examples.jsonl) holds the original times; a
    question's times are taken from it only when its raw pattern and answer outputs are identical
    and were computed there (not cache hits); questions computed in this run keep their own times.
    """
    folder = earlier_run if earlier_run.is_absolute() or earlier_run.exists() else settings.results_dir() / earlier_run
    lines = (folder / "examples.jsonl").read_text(encoding="utf-8").splitlines()
    before = {}
    for line in lines:
        try:
            r = json.loads(line)
        except json.JSONDecodeError:  # a torn last line of a killed run
            continue
        before[r["id"]] = r
    per_question, sources = [], {"this_run": 0, "earlier_run": 0}
    for r in records:
        tok, tim = r.get("tokens") or {}, r.get("timings") or {}
        answered = r.get("answer_raw") is not None
        if not tok.get("pattern_cached") and not (answered and tok.get("answer_cached")):
            per_question.append(tim.get("pattern_s", 0.0) + tim.get("answer_s", 0.0))
            sources["this_run"] += 1
            continue
        old = before.get(r["id"])
        if old is None or old.get("pattern_raw") != r.get("pattern_raw") or old.get("answer_raw") != r.get("answer_raw"):
            continue
        otok, otim = old.get("tokens") or {}, old.get("timings") or {}
        if otok.get("pattern_cached") or (answered and otok.get("answer_cached")):
            continue
        per_question.append(otim.get("pattern_s", 0.0) + otim.get("answer_s", 0.0))
        sources["earlier_run"] += 1
    return {"llm_s_per_question_mean": round(float(np.mean(per_question)), 2) if per_question else None,
            "llm_s_per_question_median": round(float(np.median(per_question)), 2) if per_question else None,
            "n_questions_timed": len(per_question), "timed_from": sources, "earlier_run": str(earlier_run)}


def setting_label(config: SimGRAGConfig, structured: str, nearest: bool) -> str:
    """The row label of a run: demonstrations, samples, decoding and the schema options."""
    if nearest:
        label = f"nearest {config.shots} (after {config.fixed_shots} fixed)"
    else:
        label = f"fixed {config.shots} (the paper's shots)"
    if nearest and config.demo_spelling:
        label += ", questions respelt for the choice"
    if config.answer_demos == "nearest":
        label += f", answer + nearest {config.answer_shots}"
    if config.samples > 1:
        label += f", samples {config.samples} (T={config.sample_temperature})"
    label += f", {structured}"
    label += "".join(f", {name}" for name, on in (("anchor", config.anchor_entity),
                                                   ("relation vocabulary", config.relation_vocabulary)) if on)
    return label


def own_type_share(records: list[dict], demo_qtypes: dict[str, str]) -> dict:
    """How many chosen pattern demonstrations have the question's own type, and strict Hits@1 of the questions whose
    demonstrations all / some / none have it (`demos.own_type_counts`): on templated questions nearly all do, and
    rewritten wordings show how far the neighbours still find it and what that costs."""
    return own_type_counts([(r.get("qtype"), [demo_qtypes.get(d) for d in r.get("pattern_demos") or []],
                             r.get("hits@1") == 1.0) for r in records])


def run_report(records: list[dict], prefill_tok_s: float = PREFILL_TOK_S,
               demo_qtypes: dict[str, str] | None = None) -> dict:
    """95% intervals of the headline rates, misses by stage per question type, tokens and demonstration cost
    (with `demo_qtypes`, the pool's id -> question type: how many demonstrations have the question's type)."""
    out = {"intervals_95": {}}
    for subset, rows in (("all", records), ("answerable", [r for r in records if r.get("answerable")])):
        for metric in ("hits@1", "containment"):
            k = sum(1 for r in rows if r.get(metric) == 1.0)
            out["intervals_95"][f"{subset}.{metric}"] = {"k": k, "n": len(rows), **wilson_interval(k, len(rows))}
    by_type: dict = {}
    for r in records:
        row = by_type.setdefault(str(r.get("qtype")), {"n": 0, "hits@1": 0, "pattern": 0, "retrieval": 0, "generation": 0})
        row["n"] += 1
        row["hits@1"] += int(r.get("hits@1") == 1.0)
        if r.get("failed_stage"):
            row[r["failed_stage"]] += 1
    out["by_qtype"] = dict(sorted(by_type.items(), key=lambda kv: -kv[1]["n"]))
    n = len(records) or 1
    tok = {}
    for r in records:
        for key, value in (r.get("tokens") or {}).items():
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                tok[key] = tok.get(key, 0) + value
    out["tokens_per_question"] = {k: round(v / n, 1) for k, v in sorted(tok.items())}
    demo_tok = [r.get("pattern_demo_tokens") or 0 for r in records]
    mean_demo = float(np.mean(demo_tok)) if demo_tok else 0.0
    sets = {tuple(r.get("pattern_demos") or ()) for r in records if r.get("pattern_demos")}
    out["demonstrations"] = {
        "demo_tokens_per_question": round(mean_demo, 1),
        "prefill_s_per_question_at": {"tok_s": prefill_tok_s, "seconds": round(mean_demo / prefill_tok_s, 2)},
        "distinct_demo_sets": len(sets),
        "note": "prefill_s: the chosen demonstrations' tokens at the given prefill speed, when nothing of them is "
                "cached; questions of one template get the same demonstrations (their entity-blanked texts are equal) "
                "and llama.cpp gets each call's prompts in text order, so within one generate call a set is prefilled "
                "once per run of equal sets (distinct_demo_sets of them over all questions); samples: per sample",
    }
    if demo_qtypes:
        out["demonstrations"]["own_type"] = own_type_share(records, demo_qtypes)
    return out


PARAPHRASES = ("synonym", "drop", "misspell", "rules", "llm")


def pool_qtypes(pool) -> dict[str, str]:
    """The demonstration pool's id -> question type (empty without a pool or without types)."""
    if pool is None:
        return {}
    return {i: str(it.qtype) for i, it in zip(pool.ids, pool.items) if getattr(it, "qtype", None) is not None}


def paraphrase_items(data, args, llm) -> dict:
    """Rewrite `data.items` in place (same ids, answers and chains; the original text stays in each item's meta)
    and say how: the kind, the seed, and for LLM paraphrases how many were asked, kept and rejected."""
    from kgrag_utils.datasets import paraphrase as para

    asked = len(data.items)
    if args.paraphrase == "llm":
        data.items, counts = para.llm_paraphrases(data.items, llm)
        return {"kind": "llm", "model": args.preset, **counts,
                "note": "the preset's own greedy paraphrases; rejected replies (a lost [mention], the question "
                        "unchanged) are left out, so n is the kept questions"}
    kinds = para.NOISE_KINDS if args.paraphrase == "rules" else (args.paraphrase,)
    data.items = para.noisy_questions(data.items, seed=args.seed, kinds=kinds)
    return {"kind": "rule", "noise": list(kinds), "seed": args.seed, "asked": asked, "kept": len(data.items)}


def main(argv=None) -> int:
    from kgrag_utils.datasets.arguments import (add_dataset_arguments, check_dataset_arguments, dataset_from_args,
                                                evaluation_params)
    from kgrag_utils.llm import DEFAULT_CPU_PRESET, get_preset, load_llm
    from kgrag_utils.methods.simgrag.stages.gsd_search import resolve_index_kind
    from kgrag_utils.records import RunRecorder, params_hash

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_dataset_arguments(ap, kinds=("kgqa",))  # any registered KG-question dataset; --option key=value
    ap.add_argument("--limit", type=int, default=100)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--take", type=int, default=0,
                    help="keep only the first N of the seeded --limit sample (file order): a subset of the same ids")
    ap.add_argument("--chunk", type=int, default=0,
                    help="compute at most N questions not yet recorded, then write the report of all recorded so far "
                         "(a long run in locked pieces that resume from the records; 0: all)")
    ap.add_argument("--report-only", action="store_true",
                    help="compute nothing: write the report of the questions recorded so far (no model is loaded)")
    ap.add_argument("--preset", default=DEFAULT_CPU_PRESET)
    ap.add_argument("--backend", default=None, help="the preset's default when omitted (llamacpp for GGUF presets)")
    ap.add_argument("--threads", type=int, default=0, help="llama.cpp threads; 0 = the backend's default")
    ap.add_argument("--structured", default=None, choices=("off", "schema"),
                    help="decoding mode: off = free text (the paper's prompts), schema = each stage's answer "
                         "constrained to its JSON schema; default: the preset's")
    ap.add_argument("--injective", default=None, choices=("true", "false"),
                    help="injective matching (false: walks allowed); default: SimGRAGConfig's")
    ap.add_argument("--anchor-entity", default=None, choices=("true", "false"),
                    help="schema mode only: the first pattern triple must name the entity the question marks in "
                         "[brackets] (SimGRAGConfig.anchor_entity); default: SimGRAGConfig's")
    ap.add_argument("--relation-vocabulary", default=None, choices=("true", "false"),
                    help="schema mode only: each pattern relation is one of the KG's relation names, an enum the "
                         "prompt lists (SimGRAGConfig.relation_vocabulary); default: SimGRAGConfig's")
    ap.add_argument("--shots", type=int, default=SimGRAGConfig().shots,
                    help="pattern shots: the fixed ones, or with --demos nearest the chosen demonstrations")
    ap.add_argument("--demos", default=SimGRAGConfig().demos, choices=("", "fixed", "nearest"),
                    help="fixed: the prompt file's shots; nearest: the training questions nearest to each question; "
                         "default: the preset's (where the dataset has training questions)")
    ap.add_argument("--fixed-shots", type=int, default=SimGRAGConfig().fixed_shots,
                    help="--demos nearest: the fixed shots kept first (shared by every question)")
    ap.add_argument("--demo-spelling", default=None, choices=("true", "false"),
                    help="nearest demos: respell misspelt question words towards the training questions' before "
                         "choosing (SimGRAGConfig.demo_spelling; kgrag_utils.spelling); default: SimGRAGConfig's")
    ap.add_argument("--samples", type=int, default=SimGRAGConfig().samples,
                    help="patterns per question (n > 1: n-1 sampled ones, each retrieved and answered, a GSD-weighted vote)")
    ap.add_argument("--sample-temperature", type=float, default=SimGRAGConfig().sample_temperature)
    ap.add_argument("--answer-demos", default=SimGRAGConfig().answer_demos, choices=("", "fixed", "nearest"),
                    help="answer prompt: nearest adds --answer-shots training questions answered from their gold evidence; "
                         "default: as the pattern demonstrations")
    ap.add_argument("--answer-shots", type=int, default=SimGRAGConfig().answer_shots)
    ap.add_argument("--paraphrase", default="", choices=("",) + PARAPHRASES,
                    help="ask the questions rewritten (gold answers unchanged): one kind of rule noise (synonym, drop, "
                         "misspell), all three (rules), or the preset's own LLM paraphrases (llm: rejected ones are "
                         "left out and counted); kgrag_utils.datasets.paraphrase, as the notebooks' question_noise")
    ap.add_argument("--batch-size", type=int, default=8)
    ap.add_argument("--embedder", default="minilm")
    ap.add_argument("--index", default="auto", choices=("auto", "flat", "hnsw"),
                    help="entity index (auto: flat below gsd_search.AUTO_HNSW_MIN_ENTITIES entities, else HNSW)")
    ap.add_argument("--run-name", default=None, help="results/<run name>; default simgrag-e2e-<dataset>")
    ap.add_argument("--timings-from", type=Path, default=None,
                    help="an earlier run folder of the same prompts: LLM seconds of cached responses come from it")
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args(argv)

    options = check_dataset_arguments(args)
    data = dataset_from_args(args, limit=args.limit or None, seed=args.seed, take=args.take)  # as notebook 01 draws it
    fake = args.preset == "fake"  # the test double replaying gold patterns: plumbing only, never a reported number
    structured = args.structured or ("off" if fake else get_preset(args.preset).structured)
    llm = None
    if args.paraphrase == "llm":
        if fake:
            raise SystemExit("--paraphrase llm needs a real LLM preset (the fake one only replays gold patterns); "
                             "use --paraphrase rules with --preset fake")
        llm = load_llm(args.preset, backend=args.backend, structured=structured,
                       **({"n_threads": args.threads} if args.threads else {}))
    paraphrase_note = paraphrase_items(data, args, llm) if args.paraphrase else None
    extra = {} if args.injective is None else {"injective": args.injective == "true"}
    if args.anchor_entity is not None:
        extra["anchor_entity"] = args.anchor_entity == "true"
    if args.relation_vocabulary is not None:
        extra["relation_vocabulary"] = args.relation_vocabulary == "true"
    if args.demo_spelling is not None:
        extra["demo_spelling"] = args.demo_spelling == "true"
    extra.update(demos=args.demos, fixed_shots=args.fixed_shots, samples=args.samples,
                 sample_temperature=args.sample_temperature, answer_demos=args.answer_demos, answer_shots=args.answer_shots)
    # this run's values (dataset, llm_preset, ...) go into the config, so the record holds them, not the defaults
    method_settings = SimGRAGConfig(dataset=args.dataset, split=args.split, limit=args.limit or 0, seed=args.seed,
                                    take=args.take,  # the sample as notebook 01 draws it (limit, seed, take)
                                    llm_preset=args.preset, llm_backend=args.backend or "", llm_structured=structured,
                                    embedder=args.embedder, shots=args.shots, pattern_source="llm",
                                    batch_size=args.batch_size, **extra)
    settings_params = method_settings.to_dict()
    for opt in ("anchor_entity", "relation_vocabulary"):  # absent when off (the default): earlier runs' keys hold
        if not settings_params.get(opt):
            settings_params.pop(opt, None)
    default = SimGRAGConfig()
    from kgrag_utils.embeddings import load_embedder
    from kgrag_utils.methods.simgrag.stages.demos import default_pool, wording_key
    from kgrag_utils.methods.simgrag.stages.pattern import pattern_family

    family = pattern_family(data.traits.shot_family, data.kg.relation_names.tolist())
    pool, demos_note = default_pool(method_settings, data, load_embedder(args.embedder), family)
    # the answer demonstrations that run ("" resolved), so that the record and the row label say it
    method_settings = method_settings.replace(
        answer_demos=requested_answer_demos(method_settings) if pool is not None else "fixed")
    settings_params["answer_demos"] = method_settings.answer_demos
    if pool is None or requested_demos(method_settings) == "fixed":
        settings_params.pop("demos", None)  # fixed shots (the historical behaviour): earlier run keys hold
        settings_params.pop("fixed_shots", None)  # unused with fixed demos
    else:
        settings_params["demos"] = "nearest"
        settings_params["demo_wording"] = wording_key(family)  # another wording starts the run afresh, never a mix
        print(f"demonstrations: {len(pool)} questions of the {pool.split!r} split ({demos_note})", flush=True)
    if settings_params.get("demos") != "nearest" or not settings_params.get("demo_spelling"):
        settings_params.pop("demo_spelling", None)  # fixed shots, or the choice as written: earlier run keys hold
    if args.samples == 1:
        settings_params.pop("sample_temperature", None)  # unused with one (greedy) sample
    for opt in ("fixed_shots", "samples", "sample_temperature"):  # absent at defaults: keys hold
        if settings_params.get(opt) == getattr(default, opt):
            settings_params.pop(opt, None)
    if settings_params.get("answer_demos") == "fixed":  # the fixed answer shots (the historical behaviour): keys hold
        settings_params.pop("answer_demos")
    evaluation = evaluation_params(args.dataset, args.split, options)  # a file option by its content
    params = {**settings_params, **({"take": args.take} if args.take else {}),
              **({"paraphrase": args.paraphrase} if args.paraphrase else {}),
              **evaluation}  # absent without options: old run keys hold
    default_name = f"simgrag-e2e-{args.dataset}" + (f"-{params_hash(evaluation)[:8]}" if evaluation else "")
    recorder = RunRecorder("simgrag", params, run_name=args.run_name or default_name)
    print(f"{data.name}: {len(data.items)} questions, {len(recorder.done_ids)} already in {recorder.run_dir}", flush=True)
    index_kind = resolve_index_kind(args.index, data.kg.num_entities)
    t0 = time.perf_counter()
    done_before = len(recorder.done_ids)
    backend = args.backend or ("fake" if fake else get_preset(args.preset).backend)
    if not args.report_only and any(q.qid not in recorder.done_ids for q in data.items):  # else: the report only
        retriever = GSDRetriever.from_embedder(data.kg, args.embedder, index_kind=args.index)
        llm = replay_gold_llm(data.items) if fake else llm or load_llm(
            args.preset, backend=args.backend, structured=structured, **({"n_threads": args.threads} if args.threads else {}))
        backend = getattr(llm, "backend_name", backend)
        method = SimGRAG(method_settings, data.kg, retriever, llm, dataset=data.name, demo_pool=pool)
        try:
            todo = [q.qid for q in data.items if q.qid not in recorder.done_ids]
            todo = set(todo[: args.chunk] if args.chunk else todo)
            method.run([q for q in data.items if q.qid in todo or q.qid in recorder.done_ids], recorder=recorder,
                       progress=True)
        except BaseException as exc:  # keep what was recorded; mark the run as failed
            recorder.fail(exc)
            raise
    wall = time.perf_counter() - t0
    wanted = {q.qid for q in data.items}
    records = [r for r in recorder.examples if r["id"] in wanted]
    summary = summarize(records)
    processed = len(records) - done_before
    timing = {"session_wall_s": round(wall, 1), "questions_this_session": processed,
              "session_wall_s_per_question": round(wall / processed, 2) if processed else None,
              **seconds_per_question(records)}
    if args.timings_from is not None:
        timing["first_computation"] = first_computation_seconds(records, args.timings_from)
    llm_stats = llm.stats if llm is not None else None
    recorder.finish(summary=summary, timings=timing, tokens={**summary["tokens"], **(llm_stats or {})})
    result = {
        "benchmark": "simgrag_e2e", "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "dataset": data.name, "split": data.split, "n_questions": len(records),
        "n_planned": len(data.items), "complete": len(records) == len(data.items), "answerable_rate": data.answerable_rate,
        "llm": {"preset": args.preset, "backend": backend, "structured": structured, "stats_this_session": llm_stats},
        "settings": method_settings.to_dict(), "embedder": args.embedder, "index": index_kind, "run": str(recorder.run_dir.name),
        "metric_note": "hits@1: strict (the first parsed answer, normalised, equals a gold answer); containment: "
                       "lenient (a gold answer is a substring of the raw answer, the paper's 'Hits@1'); failed "
                       "examples count as wrong (n_failed); failed_stage: the stage blamed for each wrong answer",
        "setting": setting_label(method_settings, structured, nearest=pool is not None and
                                 requested_demos(method_settings) == "nearest"),
        "demos_note": demos_note, "paraphrase": paraphrase_note,
        "summary": summary, "seconds": timing, "report": run_report(records, demo_qtypes=pool_qtypes(pool)),
        "outcomes": {"simgrag": per_question(records, ["hits@1", "containment", "failed_stage"])},
        "machine": {"platform": platform.platform(), "cpus": os.cpu_count(),
                    "load_average_at_end": [round(x, 2) for x in os.getloadavg()]},
    }
    if args.out is not None:
        print(f"wrote {write_result(args.out, result, args)}")
    keys = ("n", "pattern_parse_rate", "retrieval_hit_rate", "all", "answerable", "failed_stage", "failed_stage_lenient")
    print(json.dumps({k: summary[k] for k in keys}, indent=1), json.dumps(timing))
    return 0


if __name__ == "__main__":
    sys.exit(main())
