"""`kgrag compare` (kgrag_utils/results_diff.py): two results folders of the same runs compare equal; a changed
record, a changed score and a run recorded before summaries stored rows are each seen."""

from __future__ import annotations

import json
import shutil

from kgrag_utils import cli
from kgrag_utils.results_diff import compare
from test_report import _simgrag_example, write_run


def _folder(root, examples, name="01_simgrag-aaaa"):
    write_run(root, name, {"method": "simgrag", "status": "ok", "params": {"dataset": "metaqa-1hop"}}, examples)
    return root


def test_the_same_runs_compare_equal_and_a_changed_answer_is_named(tmp_path):
    before = _folder(tmp_path / "before", [_simgrag_example(i) for i in range(4)])
    after = tmp_path / "after"
    shutil.copytree(before, after)
    (after / "01_simgrag-aaaa").rename(after / "01_simgrag-bbbb")  # another run key: paired by notebook
    assert cli.main(["compare", str(before), str(after), "--out", str(tmp_path / "same.json")]) == 0
    out = json.loads((tmp_path / "same.json").read_text())
    assert out["verdict"]["example_values_differ"] == 0 and out["verdict"]["score_rows_same"]
    assert out["verdict"]["score_rows_compared"] == 6 and out["provenance"]["arguments"]["before"] == str(before)  # hits@1, containment, fact_hit; all and answerable

    changed = [_simgrag_example(i) for i in range(4)]
    changed[1]["hits@1"] = 0.0  # one answer scored differently
    other = _folder(tmp_path / "changed", changed)
    assert cli.main(["compare", str(before), str(other), "--out", str(tmp_path / "changed.json")]) == 1
    out = json.loads((tmp_path / "changed.json").read_text())
    run = out["runs"]["01_simgrag"]
    assert run["examples"]["n_differ"] >= 1 and any(d[0] == "1/hits@1" for d in run["examples"]["differ"])
    assert not run["rows"]["same"] and out["verdict"]["summary_values_differ"] > 0


def test_a_run_recorded_before_rows_were_stored_is_scored_from_its_records(tmp_path):
    examples = [_simgrag_example(i) for i in range(4)]
    after = _folder(tmp_path / "after", examples)
    before = tmp_path / "before"
    shutil.copytree(after, before)
    run = before / "01_simgrag-aaaa" / "run.json"
    rec = json.loads(run.read_text())
    for key in ("rows", "scores", "scores_answerable", "method", "n_answerable"):
        rec["summary"].pop(key)
    run.write_text(json.dumps(rec))
    out = compare(before, after)
    rows = out["runs"]["01_simgrag"]["rows"]
    assert rows["same"] and rows["before_rows"].startswith("from its records")


def test_benchmark_files_compare_value_by_value_and_a_missing_one_is_a_change(tmp_path):
    from kgrag_utils.results_diff import unchanged

    runs = _folder(tmp_path / "runs", [_simgrag_example(i) for i in range(2)])
    (tmp_path / "b").mkdir()
    (tmp_path / "a").mkdir()
    (tmp_path / "b" / "x.json").write_text(json.dumps({"recall": 0.5, "wall_s": 3.0}))
    (tmp_path / "a" / "x.json").write_text(json.dumps({"recall": 0.5, "wall_s": 9.0}))  # timing only: volatile
    out = compare(runs, runs, (tmp_path / "b", tmp_path / "a"))
    assert out["benchmark_files"]["x.json"]["n_volatile"] == 1 and unchanged(out["verdict"])
    (tmp_path / "b" / "y.json").write_text(json.dumps({"recall": 0.5}))  # no y.json after
    assert not unchanged(compare(runs, runs, (tmp_path / "b", tmp_path / "a"))["verdict"])
