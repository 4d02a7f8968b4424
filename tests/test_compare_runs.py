"""benchmarks/compare_runs.py: two results folders of the same runs compare equal; a changed record, a changed
score and a run recorded before summaries stored rows are each seen."""

from __future__ import annotations

import json
import shutil

from stand_ins import benchmark_module
from test_report import _simgrag_example, write_run


def _folder(root, examples, name="01_simgrag-aaaa"):
    write_run(root, name, {"method": "simgrag", "status": "ok", "params": {"dataset": "metaqa-1hop"}}, examples)
    return root


def test_the_same_runs_compare_equal_and_a_changed_answer_is_named(tmp_path):
    compare = benchmark_module("compare_runs")
    before = _folder(tmp_path / "before", [_simgrag_example(i) for i in range(4)])
    after = tmp_path / "after"
    shutil.copytree(before, after)
    (after / "01_simgrag-aaaa").rename(after / "01_simgrag-bbbb")  # another run key: paired by notebook
    out = compare.main([str(before), str(after), "--out", str(tmp_path / "same.json")])
    assert out["verdict"]["example_values_differ"] == 0 and out["verdict"]["score_rows_same"]
    assert out["verdict"]["score_rows_compared"] == 6  # hits@1, containment, fact_hit; all and answerable

    changed = [_simgrag_example(i) for i in range(4)]
    changed[1]["hits@1"] = 0.0  # one answer scored differently
    other = _folder(tmp_path / "changed", changed)
    out = compare.main([str(before), str(other), "--out", str(tmp_path / "changed.json")])
    run = out["runs"]["01_simgrag"]
    assert run["examples"]["n_differ"] >= 1 and any(d[0] == "1/hits@1" for d in run["examples"]["differ"])
    assert not run["rows"]["same"] and out["verdict"]["summary_values_differ"] > 0


def test_a_run_recorded_before_rows_were_stored_is_scored_from_its_records(tmp_path):
    compare = benchmark_module("compare_runs")
    examples = [_simgrag_example(i) for i in range(4)]
    after = _folder(tmp_path / "after", examples)
    before = tmp_path / "before"
    shutil.copytree(after, before)
    run = before / "01_simgrag-aaaa" / "run.json"
    rec = json.loads(run.read_text())
    for key in ("rows", "scores", "scores_answerable", "method", "n_answerable"):
        rec["summary"].pop(key)
    run.write_text(json.dumps(rec))
    out = compare.main([str(before), str(after), "--out", str(tmp_path / "old.json")])
    rows = out["runs"]["01_simgrag"]["rows"]
    assert rows["same"] and rows["before_rows"].startswith("from its records")
