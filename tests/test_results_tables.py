"""The result tables in the docs are generated from benchmarks/results/*.json (benchmarks/results_tables.py).

A committed table that disagrees with its JSON fails here: rerun `python benchmarks/results_tables.py`.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from stand_ins import benchmark_module

ROOT = Path(__file__).resolve().parents[1]
rt = benchmark_module("results_tables")


def test_every_committed_table_agrees_with_its_json():
    assert rt.stale() == [], "stale tables: run `python benchmarks/results_tables.py`"


def test_every_table_has_one_pair_of_markers():
    names = [t.name for t in rt.TABLES]
    assert len(names) == len(set(names))
    for t in rt.TABLES:
        text = (ROOT / t.doc).read_text(encoding="utf-8")
        start, end = rt._markers(t)
        assert text.count(start) == 1 and text.count(end) == 1, t.name


def test_a_changed_json_makes_its_table_stale(tmp_path):
    results = tmp_path / "results"
    shutil.copytree(rt.RESULTS, results, ignore=shutil.ignore_patterns("*.png", "*.svg"))
    assert rt.stale(results=results) == []
    path = results / "simgrag_metaqa-2hop.json"
    data = json.loads(path.read_text(encoding="utf-8"))
    data["ms_per_query"]["vector_search_cpu"]["median"] = 12.345
    path.write_text(json.dumps(data), encoding="utf-8")
    stale = rt.stale(results=results)
    assert any(s.startswith("simgrag-oracle-latency ") for s in stale), stale
    assert "| 12.35 |" in rt.rendered(results=results)["docs/RESULTS.md"]


def test_a_number_in_prose_follows_its_json(tmp_path):
    results = tmp_path / "results"
    shutil.copytree(rt.RESULTS, results, ignore=shutil.ignore_patterns("*.png", "*.svg"))
    path = results / "simgrag_metaqa-1hop.json"
    data = json.loads(path.read_text(encoding="utf-8"))
    data["batched_node_search_ms_per_node"] = 7.77
    path.write_text(json.dumps(data), encoding="utf-8")
    assert [s for s in rt.stale(results=results) if s.startswith("sg-1hop-node-ms ")]
    text = rt.rendered(results=results)["docs/RESULTS.md"]
    assert "<!-- value:sg-1hop-node-ms -->7.77<!-- /value:sg-1hop-node-ms --> ms per node" in text


def test_a_changed_published_number_makes_its_table_stale(monkeypatch):
    from kgrag_utils.methods.kgp import published

    monkeypatch.setitem(published.TABLE1_F1["KGP-T5"], "iirc", 99.99)
    stale = rt.stale()
    assert any(s.startswith("kgp-iirc-published ") for s in stale)


def test_formats_round_half_up_from_the_number_the_json_writes():
    assert rt.fmt(0.8255, "%.1f") == "82.6"  # 0.8255 * 100 is 82.54999... in binary
    assert rt.fmt(1.0, "%.1f~") == "100" and rt.fmt(0.9771, "%.1f~") == "97.7"
    assert rt.fmt(14872, ",") == "14,872" and rt.fmt(1368.84, ",.0f") == "1,369"
    assert rt.fmt("schema", None) == "schema" and rt.fmt(None, ".1f") == "-"


def test_paths_select_by_index_by_field_and_fail_loudly():
    data = {"runs": [{"name": "a", "v": 1}, {"name": "b", "v": 2}]}
    assert rt.lookup(data, "runs/1/v", "x") == 2 and rt.lookup(data, "runs/[name=a]/v", "x") == 1
    assert rt.fill("{runs/[name=b]/v} and {missing|n/a}", data, "x") == "2 and n/a"
    with pytest.raises(rt.TableError, match="no key 'w'"):
        rt.lookup(data, "runs/0/w", "x")
    with pytest.raises(rt.TableError, match="0 items with name = 'c'"):
        rt.lookup(data, "runs/[name=c]/v", "x")


def test_the_readme_is_a_front_page():
    lines = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    assert len(lines) <= 400
    assert "make test" in "\n".join(lines) and "<!-- repro:headline -->" in lines  # from run records: tests/test_repro.py


def test_every_table_in_the_results_doc_is_generated():
    """docs/RESULTS.md holds no table typed by hand: declare it in benchmarks/results_tables.py instead."""
    import re

    text = (ROOT / "docs" / "RESULTS.md").read_text(encoding="utf-8")
    outside = re.sub(r"<!-- (table|repro):([\w.+-]+) -->.*?<!-- /\1:\2 -->", "", text, flags=re.S)
    typed = [line[:80] for line in outside.splitlines() if line.startswith("|")]
    assert typed == [], "tables typed by hand in docs/RESULTS.md (generate them): " + "; ".join(typed[:3])
