"""The run explorer: lazy reading of a run, each method's outline and panels, filters, run-to-run comparison,
the widget (driven without a browser) and the static fallback."""

from __future__ import annotations

import json

import pytest

from kgrag_utils import records, settings
from kgrag_utils.errors import ConfigError
from kgrag_utils.explore import compare_runs, display_mode, explore, list_runs, open_run, previous_run
from kgrag_utils.explore.graphs import layout_positions, static_figure, to_plotly
from kgrag_utils.explore.views import view_for


@pytest.fixture(autouse=True)
def _own_results(tmp_path, monkeypatch):
    """Each test its own results folder (the session's is shared, and these tests list its runs)."""
    monkeypatch.setenv("KGRAG_RESULTS_DIR", str(tmp_path / "results"))


# ----------------------------------------------------------------------------- records like the methods write
def simgrag_rec(i, pattern_rel="written by", answer="Ann", gold=("Ann",), stage=None):
    sub = {"gsd": 0.1 * i, "triples": [["Film", "written_by", "Ann"], ["Film", "written_by", "Bob"]],
           "nodes": {"UNKNOWN movie 1": "Film", "Bob": "Bob", "UNKNOWN writer 2": "Ann"},
           "node_terms": {"Bob": 0.0}, "edge_terms": [0.0, 0.2], "reversed": [False, True]}
    pattern = {"triples": [["UNKNOWN movie 1", pattern_rel, "Bob"], ["UNKNOWN movie 1", pattern_rel, "UNKNOWN writer 2"]],
               "known": ["Bob"], "unknown": ["UNKNOWN movie 1", "UNKNOWN writer 2"], "answer": None}
    hit = float(answer in gold)
    return {"id": f"q{i}", "task": "qa", "question": f"who wrote with [Bob] {i}", "answers_gold": list(gold),
            "pattern": pattern, "pattern_prompt": [{"role": "user", "content": "Question: ..."}], "pattern_raw": "raw",
            "pattern_ok": True, "candidates": {"nodes": {"Bob": [["Bob", 0.0], ["Bobby", 0.4]]},
                                                "relations": [{"relation": pattern_rel, "top": [["written_by", 0.0]]}]},
            "subgraphs": [sub, dict(sub, gsd=0.5)], "evidence": ["graph [1]: (Film, written_by, Ann)"],
            "answer_raw": answer, "answers": [answer], "prediction": answer, "hits@1": hit, "containment": hit,
            "failed": False, "failure": None, "failed_stage": stage if not hit else None,
            "timings": {"pattern_s": 0.1}, "tokens": {"pattern_prompt": 10}}


def write_run(name, method, rows, params=None, finish=True):
    rec = records.RunRecorder(method, params or {"dataset": "sample-movies-2hop", "n": len(rows)}, run_name=name)
    for r in rows:
        rec.add(r)
    if finish:
        rec.finish(summary={"n": len(rows)})
    else:
        rec.close()
    return settings.results_dir() / name


@pytest.fixture
def simgrag_run():
    rows = [simgrag_rec(i, answer="Ann" if i % 3 else "Cy", stage="generation") for i in range(12)]
    write_run("sg-a", "simgrag", rows)
    return open_run("sg-a")


# ----------------------------------------------------------------------------- lazy reading
def test_a_run_is_indexed_once_and_read_one_record_at_a_time(simgrag_run):
    view = simgrag_run
    rows, _ = records.read_examples(view.path)
    assert len(view) == 12 and view.ids == [r["id"] for r in rows]
    assert view.record(5) == rows[5] and view.by_id("q7") == rows[7]
    assert list(view.outline.columns)[:4] == ["position", "id", "question", "status"]
    assert list(view.outline["position"]) == list(range(12))


def test_torn_lines_are_skipped_and_the_last_line_of_an_id_wins():
    d = write_run("torn", "simgrag", [simgrag_rec(0), simgrag_rec(1)], finish=False)
    with open(d / records.EXAMPLES_FILE, "a", encoding="utf-8") as fh:
        fh.write('{"id": "q9", "quest\n')                                  # torn by a crash
        fh.write(json.dumps(simgrag_rec(0, answer="Zed")) + "\n")          # q0 recorded again
    view = open_run("torn")
    assert len(view) == 2 and view.torn_lines == 1
    assert view.by_id("q0")["answers"] == ["Zed"] and view.outline.iloc[0]["status"] == "wrong"


def test_refresh_indexes_only_whole_appended_lines():
    d = write_run("growing", "simgrag", [simgrag_rec(0)], finish=False)
    view = open_run("growing")
    line = json.dumps(simgrag_rec(1))
    with open(d / records.EXAMPLES_FILE, "a", encoding="utf-8") as fh:
        fh.write(line[:20])                                                # being written
    assert view.refresh() == 0 and len(view) == 1
    with open(d / records.EXAMPLES_FILE, "a", encoding="utf-8") as fh:
        fh.write(line[20:] + "\n")
    assert view.refresh() == 1 and view.by_id("q1")["id"] == "q1" and len(view.outline) == 2


def test_an_unknown_run_is_refused_naming_the_closest(simgrag_run):
    with pytest.raises(ConfigError, match="did you mean 'sg-a'"):
        open_run("sg-b")
    with pytest.raises(ConfigError, match="out of range"):
        simgrag_run.record(12)


def test_list_runs_holds_runs_with_examples_newest_first(simgrag_run):
    write_run("sg-later", "simgrag", [simgrag_rec(0)])
    write_run("sg-empty", "simgrag", [])
    unfinished = records.RunRecorder("simgrag", {"dataset": "sample-movies-2hop"}, run_name="sg-running")
    unfinished.add(simgrag_rec(0))  # its run.json still counts 0 examples
    names = list(list_runs()["run_name"])
    assert names == ["sg-running", "sg-later", "sg-a"]
    unfinished.close()
    assert previous_run("sg-later") == "sg-running" and previous_run("sg-a") == "sg-running"


# ----------------------------------------------------------------------------- outlines and filters
def test_filters_by_status_stage_correctness_and_text(simgrag_run):
    view = simgrag_run
    wrong = view.filter(status="wrong")
    assert list(wrong["id"]) == ["q0", "q3", "q6", "q9"] and set(wrong["stage"]) == {"generation"}
    assert len(view.filter(correct="yes")) == 8 and len(view.filter(stage="generation")) == 4
    assert list(view.filter(text="BOB] 1")["id"]) == ["q1", "q10", "q11"]  # id, question, prediction; any case
    assert list(view.filter(status="wrong", text="Cy")["id"]) == ["q0", "q3", "q6", "q9"]
    with pytest.raises(ConfigError, match="not one of"):
        view.filter(status="bad")


@pytest.mark.parametrize("method, rec, status, stage", [
    ("simgrag", {"id": "a", "hits@1": 0.0, "failed": True, "failure": "pattern", "failed_stage": "pattern"}, "failed", "pattern"),
    ("simgrag", {"id": "a", "hits@1": 0.0, "failed": True, "error": "ValueError: x", "traceback": "..."}, "error", "raised an error"),
    ("compact", {"id": "a", "hits@1_compact": 0.0, "chain_correct": False, "failed_compact": False}, "wrong", "chain"),
    ("compact", {"id": "a", "hits@1_compact": 0.0, "chain_correct": True, "derivable": True, "compact_has_gold": True}, "wrong", "reading"),
    ("compact", {"id": "a", "derived_hits@1": 1.0, "derivable": True}, "ok", ""),
    ("vector_rerank", {"id": "a", "task": "passages", "rerank": {"status": "failed"}, "failed": True,
                       "variants": {"naive": {"recall@5": 1.0}, "rerank": {"recall@5": 0.0, "failed": True}}}, "failed",
     "rerank reply (failed)"),
    ("vector_rerank", {"id": "a", "task": "passages", "rerank": {"status": "ok"},
                       "variants": {"naive": {"recall@5": 1.0}, "rerank": {"recall@5": 0.5}}}, "wrong", "rerank"),
    ("vector_rerank", {"id": "a", "task": "kgqa", "rerank": {"status": "ok"},
                       "variants": {"rerank": {"hits@1": 0.0, "fact_hit": False}}}, "wrong", "rerank (chosen facts miss the answer)"),
    ("kgp", {"id": "a", "reader": True, "em": 0.0, "recall@30": 0.0}, "wrong", "retrieval (no gold passage in budget)"),
    ("kgp", {"id": "a", "reader": True, "em": 0.0, "recall@30": 1.0, "reader_failed": True}, "failed", "reader"),
    ("kgp", {"id": "a", "reader": False, "recall@5": 1.0, "recall@30": 1.0}, "ok", ""),
    ("quickstart", {"id": "a", "hits@1": 0.0, "failed": True}, "failed", "generation"),
    ("no-such-method", {"id": "a", "em": 1.0}, "ok", ""),
])
def test_each_method_outlines_its_records_in_its_own_terms(method, rec, status, stage):
    row = view_for(method).outline(rec)
    assert (row["status"], row["stage"]) == (status, stage)
    assert row["correct"] == (status == "ok")


def test_records_with_protocol_scores_are_judged_by_the_methods_headline():
    from kgrag_utils.explore.outcome import headline_value, outline

    rec = dict(simgrag_rec(0), scores={"pattern=llm": {"hits@1": 0.0, "containment": 1.0}})  # its own hits@1 says 1
    assert headline_value("simgrag", rec) == ("pattern=llm", "hits@1", 0.0)
    assert outline("simgrag", rec)["status"] == "wrong" and outline("simgrag", simgrag_rec(0))["status"] == "ok"
    compact = {"id": "c", "scores": {"derived (no LLM)": {"hits@1": 1.0}, "LLM reads compact facts": {"hits@1": 0.0}}}
    assert headline_value("compact", compact) == ("LLM reads compact facts", "hits@1", 0.0)
    kgp = {"id": "k", "reader": False, "scores": {"traversal=nollm, graph=tfidf": {"recall@5": 1.0, "recall@30": 1.0}}}
    assert headline_value("kgp", kgp)[1:] == ("recall@5", 1.0) and outline("kgp", kgp)["correct"]
    assert headline_value("no-such-method", rec) is None


# ----------------------------------------------------------------------------- panels and graphs
def _panel(panels, kind="graphs"):
    return next(p for p in panels if p.kind == kind)


def test_simgrag_draws_the_pattern_beside_each_subgraph_in_the_same_places():
    panels = view_for("simgrag").panels(simgrag_rec(0))
    p = _panel(panels)
    assert p.pinned == 1 and len(p.graphs) == 3  # the pattern, then the two subgraphs
    pattern, top1 = p.graphs[0], p.graphs[1]
    roles = {n.id: n.role for n in pattern.nodes}
    assert roles == {"UNKNOWN movie 1": "unknown", "Bob": "topic", "UNKNOWN writer 2": "unknown"}
    assert top1.pos["Film"] == pattern.pos["UNKNOWN movie 1"] and top1.pos["Ann"] == pattern.pos["UNKNOWN writer 2"]
    assert {n.id: n.role for n in top1.nodes}["Ann"] == "answer"
    assert any("edge term 0.200 (matched reversed)" in e.hover for e in top1.edges)
    summary = _panel(panels, "table").table.set_index("field")["value"]
    assert summary["gold answers"] == "Ann" and summary["predicted answers"] == "Ann" and summary["score"] == 1.0


def test_kgp_shows_the_traversal_step_by_step():
    rec = {"id": "k", "question": "q?", "supporting": ["B#2", "Z#9"], "seeds": [{"pid": "A#1", "score": 0.5}],
           "hops": [{"path": ["A#1"], "agent_called": True, "query": "B is next", "chosen": ["B#2", "C#3"]},
                    {"path": ["A#1", "B#2"], "agent_called": True, "query": "then D", "chosen": ["D#4"]}],
           "retrieved": ["A#1", "B#2", "C#3", "D#4"], "reader": True, "em": 0.0, "recall@30": 0.5}
    panels = view_for("kgp").panels(rec)
    p = _panel(panels)
    assert [len(g.edges) for g in p.graphs] == [2, 3, 3]   # after step 1, after step 2, the final walk
    final = p.graphs[-1]
    assert {n.id: n.role for n in final.nodes} == {"A#1": "seed", "B#2": "gold", "C#3": "visited", "D#4": "visited",
                                                   "Z#9": "missed"}
    assert final.pos["A#1"][0] < final.pos["B#2"][0] < final.pos["D#4"][0]  # a column per depth
    assert "then D" in final.edges[-1].hover
    steps = next(q for q in panels if q.title == "Steps").table
    assert list(steps["next evidence (LLM)"]) == ["B is next", "then D"]


def test_vector_rerank_highlights_the_chosen_candidates():
    rec = {"id": "v", "task": "passages", "gold": ["P1"], "question": "q",
           "graph": {"rerank": {"seed_entities": [[0, "Alpha", 1.0]], "query_entities": ["Alpha"],
                                "candidates": [[7, "Alpha born in Beta", 0.9], [8, "Beta near Gamma", 0.5]],
                                "candidate_triples": [["Alpha", "born in", "Beta"], ["Beta", "near", "Gamma"]]}},
           "rerank": {"status": "ok", "raw": '{"ids": [2]}', "chosen": [[8, "Beta near Gamma"]]},
           "variants": {"naive": {"passages": ["P2"], "recall@5": 0.0}, "rerank": {"passages": ["P1", "P3"], "recall@5": 1.0}}}
    panels = view_for("vector_rerank").panels(rec, passages={"P1": "the gold text"})
    g = _panel(panels).graphs[0]
    assert {(e.source, e.label, e.target): e.role for e in g.edges} == {("Alpha", "born in", "Beta"): "edge",
                                                                      ("Beta", "near", "Gamma"): "chosen"}
    cands = next(p for p in panels if p.title.startswith("Rerank candidates")).table
    assert list(cands["chosen (rank)"]) == ["", 1]
    passages = next(p for p in panels if p.title.startswith("Passages")).table
    assert passages.iloc[0].to_dict() == {"rank": 1, "passage": "P1", "gold": True, "text": "the gold text"}


def test_compact_draws_the_derivation_and_lists_the_proposals():
    rec = {"id": "c", "question": "q", "topic_entities": ["T"], "answers": ["A", "G"], "chain": "r1 > r2",
           "gold_chain": "r1 > r2", "compact_facts": [["T", "r1", "M"], ["M", "r2", "A"]], "derived_answers": ["A"],
           "proposals": [{"chain": "r1 > r2", "source": "lexicon", "score": 1.0, "derivable": True, "n_answers": 1},
                         {"chain": "r3", "source": "knn", "score": 0.2, "derivable": False, "n_answers": 0}],
           "consistency": {"consistent": True, "applicable": {"rival_derivations": True}, "conflicts": {}},
           "hits@1_compact": 1.0, "answer_compact": ["A"], "prompt_compact": "facts ...", "llm_compact": "A"}
    panels = view_for("compact").panels(rec)
    g = _panel(panels).graphs[0]
    assert {n.id: n.role for n in g.nodes} == {"T": "topic", "M": "default", "A": "answer"}
    props = next(p for p in panels if p.title == "Relation chain proposals").table
    assert list(props["chosen"]) == [True, False]


def test_a_graph_becomes_a_plotly_figure_with_facts_on_hover():
    g = _panel(view_for("simgrag").panels(simgrag_rec(0))).graphs[1]
    fig = to_plotly(g)
    nodes = next(t for t in fig.data if t.name == "nodes")
    facts = next(t for t in fig.data if t.name == "facts")
    assert set(nodes.text) == {"Film", "Ann", "Bob"}
    assert any("(Film, written_by, Bob)" in h for h in facts.hovertext)
    assert layout_positions(g) == layout_positions(g)  # deterministic
    fig = static_figure([g, g])
    assert len(fig.axes) == 2


def test_a_view_that_fails_on_a_record_says_so_and_shows_its_fields():
    from kgrag_utils.explore.views import VIEW_FAILED, panels_of

    odd = {"id": "odd", "subgraphs": "not a list of subgraphs", "question": "q"}
    panels = panels_of(view_for("simgrag"), odd)
    assert panels[0].title == VIEW_FAILED and "simgrag" in panels[0].text and "Traceback" in panels[0].text
    assert any(p.title == "Fields" for p in panels)
    assert all(p.title != VIEW_FAILED for p in panels_of(view_for("simgrag"), simgrag_rec(0)))
    from kgrag_utils.explore.outcome import outline

    row = outline("vector_rerank", {"id": "odd", "variants": ["not", "a", "mapping"]})
    assert row["id"] == "odd" and row["stage"].startswith("the view failed: ")


# ----------------------------------------------------------------------------- comparison
def test_two_runs_compared_name_the_changed_questions_and_the_stage_they_diverged_at(simgrag_run):
    rows = [simgrag_rec(i, answer="Ann" if i % 3 else "Cy", stage="generation") for i in range(12)]
    rows[0] = simgrag_rec(0, answer="Ann")                                           # gained: answer changed
    rows[1] = simgrag_rec(1, pattern_rel="acted in", answer="Cy", stage="pattern")  # lost: the pattern changed
    write_run("sg-b", "simgrag", rows[:11])                                         # q11 only in a
    table = compare_runs(simgrag_run, open_run("sg-b"))
    got = {r["id"]: (r["change"], r["diverged at"], r["stage b"]) for r in table.to_dict("records")}
    assert got == {"q0": ("gained", "generation", ""), "q1": ("lost", "pattern", "pattern")}
    assert compare_runs(simgrag_run, simgrag_run).empty


# ----------------------------------------------------------------------------- the widget and the fallback
def test_the_widget_filters_steps_and_shows_another_example(simgrag_run):
    from kgrag_utils.explore.widget import CompareView, Explorer

    ex = Explorer("sg-a")
    assert ex.position == 0 and len(ex.examples.options) == 12
    assert ex.detail.panels[0].kind == "graphs"  # the drawing first
    first = _panel(ex.detail.panels, "table").table.to_dict()
    ex.step(+1)
    assert ex.position == 1 and ex.examples.value == 1
    assert _panel(ex.detail.panels, "table").table.to_dict() != first
    ex.status_dd.value = "wrong"
    assert [p for _, p in ex.examples.options] == [0, 3, 6, 9] and ex.position == 0
    ex.step(+1)
    assert ex.position == 3
    ex.examples.value = 9
    assert ex.position == 9 and "#9 q9" in ex.count.value
    graphs = [c for c in ex.detail.box.children if "kgrag-panel" in c._dom_classes]
    assert graphs and ex.detail.box.children
    write_run("sg-c", "simgrag", [simgrag_rec(0, answer="Ann")])
    cv = CompareView("sg-a", "sg-c")
    assert list(cv.table["id"]) == ["q0"] and "q0" in cv.shown.value


def test_explore_falls_back_to_static_output_without_a_live_kernel(simgrag_run, monkeypatch):
    shown = []
    monkeypatch.setattr("IPython.display.display", lambda *objs, **kw: shown.extend(objs))
    write_run("sg-b", "simgrag", [simgrag_rec(0, answer="Ann")])
    view = explore("sg-a", compare="previous", status="wrong")
    assert view.name == "sg-a" and display_mode() == "static"
    kinds = [type(o).__name__ for o in shown]
    assert kinds.count("Figure") >= 2 and "HTML" in kinds            # the example's graphs, then the comparison's
    text = "\n".join(o.data for o in shown if type(o).__name__ == "HTML")
    assert "4 of 12 examples match" in text and "gained" in text and "sg-b (a) vs sg-a (b)" in text


def test_display_mode_reads_the_environment(monkeypatch):
    monkeypatch.setenv("KGRAG_EXPLORE", "widget")
    assert display_mode() == "widget" and display_mode("static") == "static"
    monkeypatch.setenv("KGRAG_EXPLORE", "wigdet")
    with pytest.raises(ConfigError, match="not one of auto, widget, static"):
        display_mode()


def test_the_first_figure_freezes_the_long_lived_objects_so_a_later_click_skips_them():
    """After a figure exists, plotly's objects are in gc's permanent generation (a full collection during
    a click walked them: about a second on a loaded machine)."""
    import gc

    to_plotly(_panel(view_for("simgrag").panels(simgrag_rec(0))).graphs[1])
    assert gc.get_freeze_count() > 10_000
