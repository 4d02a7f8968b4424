"""The report's tables come from run records only: adapters, shard merging, failures, stage errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kgrag_utils import report
from kgrag_utils.methods import REGISTRY, get_method
from kgrag_utils.records import to_jsonable


def write_run(root: Path, name: str, record: dict, examples: list[dict]) -> None:
    """A run folder as a notebook leaves it: the summary is the method's `summarize(examples)` (score rows included)."""
    d = root / name
    d.mkdir(parents=True)
    method = record.get("method")
    if record.get("status") == "ok" and method in REGISTRY:
        record = {**record, "summary": get_method(method).summarize(examples)}
    (d / "run.json").write_text(json.dumps(to_jsonable({"run_name": name, **record})))
    (d / "examples.jsonl").write_text("".join(json.dumps(e) + "\n" for e in examples))


def _simgrag_example(i: int) -> dict:
    # 4 questions: 2 strict hits, 3 lenient; the 4th is not answerable and lost at the pattern stage
    return {"id": str(i), "task": "qa", "pattern_source": "llm", "pattern_prompt": [{"role": "user"}],
            "hits@1": [1.0, 1.0, 0.0, 0.0][i], "containment": [1.0, 1.0, 1.0, 0.0][i], "answerable": i < 3,
            "failed": i == 3, "failed_stage": [None, None, "generation", "pattern"][i],
            "tokens": {"pattern_prompt": 100, "answer_prompt": 50, "pattern_cached": i == 0, "answer_cached": False},
            "timings": {"pattern_s": 1.0, "answer_s": 2.0}}


@pytest.fixture
def results(tmp_path):
    root = tmp_path / "results"
    llm = {"llm_preset": "tiny", "llm_backend": "llamacpp"}
    # SimGRAG: 4 questions, one lost at the pattern stage
    write_run(root, "sg", {"method": "simgrag", "status": "ok",
                           "params": {"dataset": "metaqa-1hop", "split": "test", "pattern_source": "llm", **llm}},
              [_simgrag_example(i) for i in range(4)])
    # KGP in two shards of unequal size: recall 1.0 on 1 question, 0.5 on 3 questions
    for shard, recalls in enumerate(([1.0], [1.0, 0.5, 0.0])):
        write_run(root, f"kgp-job-shard{shard}of2", {
            "method": "kgp", "status": "ok",
            "params": {"dataset": "hotpotqa", "traversal": "llm", "graph": "entity", "reader": True, **llm}},
            [{"id": f"{shard}-{i}", "ks": [5, 30], "reader": True, "variant": "traversal=llm, graph=entity",
              "failed": False, "recall@5": r5, "recall@30": 1.0, "em": 0.0, "f1": 0.0,
              "tokens": {"agent_prompt": 10, "reader_prompt": 5}, "timings": {"traversal_seconds": 1.0}}
             for i, r5 in enumerate(recalls)])
    # vector rerank: a no-LLM and an LLM variant
    write_run(root, "vr", {"method": "vector_rerank", "status": "ok", "params": {"dataset": "musique", **llm}},
              [{"id": str(i), "task": "passages", "tokens": {"prompt": 300},
                "timings": {"embed": 0.1, "naive": 0.1, "rerank_llm": 5.0},
                "variants": {"naive": {"failed": False, "recall@2": [1.0, 0.0][i], "recall@5": [1.0, 0.5][i]},
                             "rerank": {"failed": i == 0, "recall@2": 0.5, "recall@5": 1.0}}} for i in range(2)])
    # a crashed run, a killed one, and a finished one written before summaries held their score rows
    write_run(root, "bad", {"method": "compact", "status": "failed", "error": "ValueError: boom", "params": {}}, [])
    write_run(root, "killed", {"method": "kgp", "status": "running", "params": {}, "n_examples": 0}, [{"id": "0"}])
    d = root / "old"
    d.mkdir()
    (d / "run.json").write_text(json.dumps({"run_name": "old", "method": "kgp", "status": "ok", "params": {},
                                            "summary": {"n": 1, "recall@5": 1.0}}))
    (root / "junk").mkdir()
    (root / "junk" / "run.json").write_text("{not json")
    return root


def test_scores_are_long_form_with_definitions(results):
    recs = report.read_records(results)
    scores = report.score_rows(recs)
    assert list(scores.columns) == report.COLUMNS
    sg = scores[(scores.method == "simgrag") & (scores.variant == "pattern=llm")].set_index("metric")
    assert sg.loc["hits@1", "value"] == 0.5 and sg.loc["containment", "value"] == 0.75
    assert sg.loc["hits@1", "definition"].startswith("strict") and sg.loc["containment", "definition"].startswith("lenient")
    assert sg.loc["hits@1", "prompt_tokens_per_q"] == 150 and sg.loc["hits@1", "seconds_per_q"] == 3.0
    assert sg.loc["hits@1", "cached_share"] == pytest.approx(0.125)
    assert sg.loc["hits@1", "llm"] == "tiny"
    vr = scores[scores.method == "vector_rerank"].set_index(["variant", "metric"])
    assert vr.loc[("naive", "recall@5"), "llm"] == "none" and vr.loc[("naive", "recall@5"), "prompt_tokens_per_q"] == 0
    assert vr.loc[("rerank", "recall@5"), "prompt_tokens_per_q"] == 300
    assert vr.loc[("naive", "recall@5"), "seconds_per_q"] == pytest.approx(0.2)
    assert vr.loc[("rerank", "recall@5"), "seconds_per_q"] == pytest.approx(5.1)
    # failed and running runs give no scores
    assert set(scores.method) == {"simgrag", "kgp", "vector_rerank"}


def test_shards_merge_weighted_by_questions(results):
    scores = report.combine_shards(report.score_rows(report.read_records(results)))
    kgp = scores[(scores.method == "kgp") & (scores.metric == "recall@5")]
    assert len(kgp) == 1
    row = kgp.iloc[0]
    assert row["n"] == 4 and row["group"] == "kgp-job"
    assert row["value"] == pytest.approx((1 * 1.0 + 3 * 0.5) / 4)  # not the mean of the two shard means (0.75)


def test_failures_say_why(results):
    fails = report.failures_table(report.read_records(results)).set_index("run_name")
    assert fails.loc["bad", "why"] == "ValueError: boom"
    assert "resumable" in fails.loc["killed", "why"]
    assert fails.loc["junk", "status"] == "unreadable"
    assert fails.loc["old", "status"] == "unscored" and "kgrag rescore" in fails.loc["old", "why"]
    assert "sg" not in fails.index


def test_stage_errors_add_up_over_shards(results):
    st = report.stage_errors(report.read_records(results))
    sg = st[st.method == "simgrag"].set_index("stage")
    assert sg.loc["pattern", "share"] == 0.25 and sg.loc["generation", "count"] == 1
    kgp = st[st.method == "kgp"].set_index("stage")
    assert kgp.loc["reader (all gold retrieved, F1 = 0)", "n"] == 4
    assert kgp.loc["reader (all gold retrieved, F1 = 0)", "share"] == 1.0
    vr = st[st.method == "vector_rerank"].set_index("stage")
    assert vr.loc["failed: rerank reply (or, on KG questions, the answer) unusable", "share"] == 0.5


def test_published_numbers_cover_every_method_and_stay_labelled():
    pub = report.published_rows()
    assert set(pub.method) == {"simgrag", "compact", "vector_rerank", "kgp"}
    assert pub["source"].str.len().min() > 0
    sg = pub[(pub.method == "simgrag") & (pub.system == "SimGRAG")].set_index("dataset")
    assert sg.loc["metaqa-2hop", "value"] == pytest.approx(0.984)


def test_figures_draw_from_scores_and_from_nothing(results, tmp_path):
    recs = report.read_records(results)
    fig = report.cost_figure(report.combine_shards(report.score_rows(recs)))
    assert len(fig.axes) == 2 and len(fig.axes[0].collections) > 0
    fig2 = report.stage_error_figure(report.stage_errors([]))
    assert fig2.axes
    assert report.read_records(tmp_path / "nothing-here") == []


def test_vector_rerank_kg_question_runs_give_answer_rows_with_tokens_and_seconds(tmp_path):
    # vector rerank on KG questions: rerank answers from its chosen facts (hits@1, containment), every variant
    # has a fact hit; tokens are all LLM calls per question (rerank + answer), seconds the variant's own stages
    root = tmp_path / "results"
    write_run(root, "vr-kgqa", {"method": "vector_rerank", "status": "ok",
                                "params": {"dataset": "metaqa-2hop", "split": "test", "task": "kgqa",
                                           "llm_preset": "tiny"}},
              [{"id": str(i), "task": "kgqa", "answerable": i == 0,
                "variants": {"naive": {"failed": False, "fact_hit": [1.0, 0.0][i]},
                             "rerank": {"failed": False, "hits@1": [1.0, 0.0][i], "containment": 1.0,
                                        "fact_hit": [0.0, 1.0][i]}},
                "tokens": {"prompt": 400 + 200 * i, "rerank_prompt": 300, "answer_prompt": 100 + 200 * i},
                "timings": {"embed": 0.1, "naive": 0.1, "rerank_seeds": 0.2, "rerank_llm": 4.0, "rerank_answer_llm": 1.0 + i,
                            "entities_llm": 0.0}} for i in range(2)])
    scores = report.score_rows(report.read_records(root))
    vr = scores.set_index(["variant", "metric"])
    assert vr.loc[("rerank", "hits@1"), "value"] == 0.5 and vr.loc[("rerank", "hits@1"), "definition"].startswith("strict")
    assert vr.loc[("rerank", "containment"), "value"] == 1.0
    assert vr.loc[("rerank", "containment"), "definition"].startswith("lenient")
    assert vr.loc[("rerank", "hits@1"), "prompt_tokens_per_q"] == 500
    assert vr.loc[("rerank", "hits@1"), "seconds_per_q"] == pytest.approx(0.1 + 0.2 + 4.0 + 1.5)
    assert vr.loc[("rerank", "hits@1"), "llm"] == "tiny" and vr.loc[("rerank", "hits@1"), "dataset"] == "metaqa-2hop"
    assert vr.loc[("naive", "fact_hit"), "value"] == 0.5 and vr.loc[("naive", "fact_hit"), "llm"] == "none"
    assert vr.loc[("naive", "fact_hit"), "prompt_tokens_per_q"] == 0
    assert vr.loc[("naive", "fact_hit"), "seconds_per_q"] == pytest.approx(0.2)
    assert ("naive", "hits@1") not in vr.index and ("rerank", "recall@5") not in vr.index
    answerable = vr.loc[("rerank, answerable", "hits@1")]
    assert answerable["value"] == 1.0 and answerable["n"] == 1 and answerable["prompt_tokens_per_q"] == 500


def test_rescore_gives_older_runs_their_rows_from_their_own_records(tmp_path, monkeypatch):
    from kgrag_utils import cli, settings
    from kgrag_utils.rescore import ADDED, rescore

    root = tmp_path / "results"
    monkeypatch.setenv("KGRAG_RESULTS_DIR", str(root))
    examples = [_simgrag_example(i) for i in range(4)]
    full = get_method("simgrag").summarize(examples)
    old = {k: v for k, v in full.items() if k not in ADDED}  # a summary as release 0.1 wrote it
    for name, summary in (("old", old), ("edited", {**old, "pattern_parse_rate": 0.123})):
        d = root / name
        d.mkdir(parents=True)
        (d / "run.json").write_text(json.dumps(to_jsonable({"run_name": name, "method": "simgrag", "status": "ok",
                                                             "params": {"dataset": "metaqa-1hop"}, "summary": summary})))
        (d / "examples.jsonl").write_text("".join(json.dumps(e) + "\n" for e in examples))
    assert report.score_rows(report.read_records(root)).empty
    assert set(report.failures_table(report.read_records(root))["status"]) == {"unscored"}
    assert cli.main(["rescore", "--dry-run"]) == 1  # "edited" does not come back from its records
    assert report.score_rows(report.read_records(root)).empty  # a dry run writes nothing
    outcome = rescore(settings.results_dir())
    assert outcome["old"] == "rescored" and outcome["edited"].startswith("differs: pattern_parse_rate")
    scores = report.score_rows(report.read_records(root))
    assert set(scores.run_name) == {"old"}
    got = scores.set_index(["variant", "metric"])["value"].to_dict()
    assert got == {(r["variant"], r["metric"]): r["value"] for r in full["rows"]}
    stored = json.loads((root / "old" / "run.json").read_text())["summary"]
    assert stored["pattern_parse_rate"] == old["pattern_parse_rate"] and stored["stage_errors"] == full["stage_errors"]
    assert rescore(settings.results_dir())["old"] == "has rows"


def test_vector_rerank_losses_at_the_rerank_reach_the_report_and_match_the_explorer():
    """A usable reply ("json", "text": vector_rerank/rerank.py) whose pick scores below plain retrieval loses
    the question at the rerank, in the summary (so in the report's chart) and in the explorer alike; an
    unusable one at the reply."""
    import pandas as pd

    from kgrag_utils.methods.vector_rerank import view
    from kgrag_utils.methods.vector_rerank.summary import RERANK_LOSS_STAGE, RERANK_STAGE, stage_errors

    def rec(status, rerank, naive, failed=False):
        return {"id": status, "task": "passages", "rerank": {"status": status}, "failed": failed,
                "variants": {"naive": {"recall@5": naive}, "rerank": {"recall@5": rerank, "failed": failed}}}

    recs = [rec("json", 0.5, 1.0), rec("text", 0.0, 0.5), rec("json", 1.0, 1.0), rec("failed", 0.0, 1.0, failed=True)]
    assert stage_errors(recs) == {RERANK_STAGE: 1, RERANK_LOSS_STAGE: 2}
    assert [view.outline(r)["stage"] for r in recs] == ["rerank", "rerank", "", "rerank reply (failed)"]
    fig = report.stage_error_figure(pd.DataFrame([
        {"method": "vector_rerank", "dataset": "sample-passages", "group": "g", "stage": RERANK_LOSS_STAGE, "n": 4,
         "count": 2.0, "share": 0.5},
        {"method": "simgrag", "dataset": "sample-movies-2hop", "group": "g", "stage": "pattern", "n": 8, "count": 0.0,
         "share": 0.0}]))
    rows = sorted(t.get_text() for t in fig.axes[0].get_yticklabels())  # no Python tuples as row names
    assert rows == ["simgrag · sample-movies-2hop  (no errors)", "vector_rerank · sample-passages"]
