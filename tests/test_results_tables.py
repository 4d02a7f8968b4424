"""The result tables in the docs are generated from benchmarks/results/*.json (declared in
configs/tables.py, by kgrag_utils/repro/bench_tables.py).

A committed table that disagrees with its JSON fails here: rerun `kgrag tables`.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from kgrag_utils.errors import ConfigError
from kgrag_utils.repro import bench_tables as bt
from kgrag_utils.repro import blocks

ROOT = Path(__file__).resolve().parents[1]
TABLES = bt.tables()  # the declarations, loaded as `kgrag tables` loads them


def test_every_committed_table_agrees_with_its_json():
    assert bt.stale(TABLES) == [], "stale tables: run `kgrag tables`"


def test_every_table_has_one_pair_of_markers():
    names = [t.name for t in TABLES]
    assert len(names) == len(set(names))
    for t in TABLES:
        text = (ROOT / t.doc).read_text(encoding="utf-8")
        start, end = blocks.markers(t.kind, t.name)
        assert text.count(start) == 1 and text.count(end) == 1, t.name


def test_a_changed_json_makes_its_table_stale(tmp_path):
    results = tmp_path / "results"
    shutil.copytree(bt.results_dir(), results, ignore=shutil.ignore_patterns("*.png", "*.svg"))
    assert bt.stale(TABLES, results=results) == []
    path = results / "simgrag_metaqa-2hop.json"
    data = json.loads(path.read_text(encoding="utf-8"))
    data["ms_per_query"]["vector_search_cpu"]["median"] = 12.345
    path.write_text(json.dumps(data), encoding="utf-8")
    stale = bt.stale(TABLES, results=results)
    assert any(s.startswith("simgrag-oracle-latency ") for s in stale), stale
    assert "| 12.35 |" in bt.rendered(TABLES, results=results)["docs/RESULTS.md"]


def test_a_number_in_prose_follows_its_json(tmp_path):
    results = tmp_path / "results"
    shutil.copytree(bt.results_dir(), results, ignore=shutil.ignore_patterns("*.png", "*.svg"))
    path = results / "simgrag_metaqa-1hop.json"
    data = json.loads(path.read_text(encoding="utf-8"))
    data["batched_node_search_ms_per_node"] = 7.77
    path.write_text(json.dumps(data), encoding="utf-8")
    assert [s for s in bt.stale(TABLES, results=results) if s.startswith("sg-1hop-node-ms ")]
    text = bt.rendered(TABLES, results=results)["docs/RESULTS.md"]
    assert "<!-- value:sg-1hop-node-ms -->7.77<!-- /value:sg-1hop-node-ms --> ms per node" in text


def test_a_changed_published_number_makes_its_table_stale(monkeypatch):
    from kgrag_utils.methods.kgp import published

    monkeypatch.setitem(published.TABLE1_F1["KGP-T5"], "iirc", 99.99)
    stale = bt.stale(TABLES)
    assert any(s.startswith("kgp-iirc-published ") for s in stale)


def test_formats_round_half_up_from_the_number_the_json_writes():
    assert bt.fmt(0.8255, "%.1f") == "82.6"  # 0.8255 * 100 is 82.54999... in binary
    assert bt.fmt(1.0, "%.1f~") == "100" and bt.fmt(0.9771, "%.1f~") == "97.7"
    assert bt.fmt(14872, ",") == "14,872" and bt.fmt(1368.84, ",.0f") == "1,369"
    assert bt.fmt("schema", None) == "schema" and bt.fmt(None, ".1f") == "-"


def test_paths_select_by_index_by_field_and_fail_loudly():
    data = {"runs": [{"name": "a", "v": 1}, {"name": "b", "v": 2}]}
    assert bt.lookup(data, "runs/1/v", "x") == 2 and bt.lookup(data, "runs/[name=a]/v", "x") == 1
    assert bt.fill("{runs/[name=b]/v} and {missing|n/a}", data, "x") == "2 and n/a"
    with pytest.raises(bt.TableError, match="no key 'w'"):
        bt.lookup(data, "runs/0/w", "x")
    with pytest.raises(bt.TableError, match="0 items with name = 'c'"):
        bt.lookup(data, "runs/[name=c]/v", "x")


def test_the_readme_is_a_front_page():
    lines = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    assert len(lines) <= 400
    assert "make test" in "\n".join(lines) and "<!-- repro:headline -->" in lines  # from run records: tests/test_repro.py


def test_every_table_in_the_results_doc_is_generated():
    """docs/RESULTS.md holds no table typed by hand: declare it in configs/tables.py instead."""
    import re

    text = (ROOT / "docs" / "RESULTS.md").read_text(encoding="utf-8")
    outside = re.sub(r"<!-- (table|repro):([\w.+-]+) -->.*?<!-- /\1:\2 -->", "", text, flags=re.S)
    typed = [line[:80] for line in outside.splitlines() if line.startswith("|")]
    assert typed == [], "tables typed by hand in docs/RESULTS.md (generate them): " + "; ".join(typed[:3])


def test_kgrag_tables_writes_each_block_between_its_markers_and_checks_it(tmp_path, monkeypatch, capsys):
    from argparse import Namespace

    from kgrag_utils import cli

    (tmp_path / "m.json").write_text(json.dumps({"v": 0.5}))
    doc = tmp_path / "doc.md"
    doc.write_text("a <!-- value:v -->?<!-- /value:v --> b\n<!-- table:t -->\n<!-- /table:t -->\n")
    declared = [bt.Value("v", str(doc), "m.json", "{v:%.0f}"), bt.Table("t", str(doc), ("x",), [bt.Row("m.json", "{v}")])]
    monkeypatch.setattr(bt, "results_dir", lambda: tmp_path)
    assert bt.main(Namespace(check=True, show=None), declared) == 1
    assert "stale table: v" in capsys.readouterr().err
    assert bt.main(Namespace(check=False, show=None), declared) == 0
    assert doc.read_text() == "a <!-- value:v -->50<!-- /value:v --> b\n<!-- table:t -->\n| x |\n|---|\n| 0.5 |\n" \
                              "<!-- /table:t -->\n"
    assert bt.main(Namespace(check=True, show=None), declared) == 0
    assert cli.main(["tables", "--show", "no-such-table"]) == 2  # one line naming the declared tables
    assert "no table 'no-such-table'; tables: simgrag-oracle-latency" in capsys.readouterr().err


def test_one_splice_writes_the_blocks_of_both_generators():
    text = "x <!-- value:n -->1<!-- /value:n --> y\n<!-- table:t -->\nold\n<!-- /table:t -->\n"
    assert blocks.splice(text, "value", "n", "2") == text.replace(">1<", ">2<")
    assert blocks.content(blocks.splice(text, "table", "t", "| new |"), "table", "t") == "| new |"
    # a run-record table (kgrag repro TABLE --write) is added at the end of a file that has no block for it
    assert blocks.splice("x", "repro", "r", "| a |\n", append=True) == "x\n<!-- repro:r -->\n| a |\n<!-- /repro:r -->\n"
    with pytest.raises(ConfigError, match=r"doc.md has no block <!-- repro:r -->"):
        blocks.splice("x", "repro", "r", "| a |", where="doc.md")
