"""The method protocol: one config base, one registry, and notebooks whose defaults are the configs'.

Every registered method has a `<M>Config` on `MethodConfig` (unknown keys refused naming the closest
valid key, `from_params(globals())` ignoring unrelated names, one-line errors), and its notebook's
parameters cell repeats every config default as a literal (this one test replaces a copy per method).
"""

from __future__ import annotations

import pytest

from kgrag_utils import runner
from kgrag_utils.errors import ConfigError
from kgrag_utils.methods import REGISTRY, MethodConfig, get_method, method_for_notebook, methods

METHODS = methods("method")
IDS = [s.name for s in METHODS]


def test_the_registry_lists_the_four_methods_and_every_notebook():
    assert [s.name for s in METHODS] == ["simgrag", "compact", "vector_rerank", "kgp"]
    listed = {s.notebook for s in REGISTRY.values()}
    on_disk = {p.name for p in runner.resolve_notebook("00_quickstart").parent.glob("*.ipynb")}
    assert listed == on_disk
    for spec in REGISTRY.values():
        assert method_for_notebook(spec.notebook) is spec and method_for_notebook(spec.notebook_stem) is spec
    assert method_for_notebook("99_nothing") is None


def test_report_and_explorer_are_notebook_entries_not_methods():
    from kgrag_utils.methods.base import REGISTERED
    from kgrag_utils.methods.registry import NotebookEntry

    for name in ("report", "explore"):
        entry = get_method(name)
        assert isinstance(entry, NotebookEntry) and entry.kind == "report" and entry.config_class is None
        assert name not in REGISTERED  # no Method subclass stands for a notebook
    assert {s.name for s in methods("tour")} == {"quickstart"}


def test_a_fifth_method_registers_itself_by_its_class_statement():
    from kgrag_utils.methods.base import REGISTERED
    from kgrag_utils.methods.registry import entries

    try:
        class Fifth(Method):
            name = "fifth"
            notebook = "07_fifth.ipynb"
            label = "a toy"

        class Variant(Fifth):  # no notebook of its own (a test's, a dataset kind's subclass): not listed
            pass

        assert get_method("fifth").method_class is Fifth and list(entries())[-1] == "fifth"
        assert [s.method_class for s in methods()].count(Fifth) == 1 and Variant not in REGISTERED.values()
        with pytest.raises(ConfigError, match="method name 'fifth' is taken"):
            class Other(Method):  # noqa: F841 - another class under a registered name is refused
                name = "fifth"
                notebook = "08_other.ipynb"
    finally:
        REGISTERED.pop("fifth", None)
    assert "fifth" not in entries()


def test_an_unknown_method_name_is_refused_naming_the_closest():
    with pytest.raises(ConfigError, match="did you mean 'simgrag'"):
        get_method("simgrg")


@pytest.mark.parametrize("spec", METHODS, ids=IDS)
def test_every_config_is_a_method_config_with_shared_run_fields(spec):
    cls = spec.config_class
    assert issubclass(cls, MethodConfig) and spec.method_class.config_class is cls
    for name in ("dataset", "split", "limit", "seed", "llm_preset", "llm_backend", "embedder"):
        assert name in cls.model_fields, name
    cfg = cls()
    assert cfg.replace(seed=3).seed == 3 and cfg.seed == 0  # frozen: replace returns a copy
    with pytest.raises(Exception):
        cfg.seed = 5  # type: ignore[misc]


@pytest.mark.parametrize("spec", METHODS, ids=IDS)
def test_configs_refuse_unknown_keys_naming_the_closest_valid_key(spec):
    cls = spec.config_class
    field = next(f for f in cls.model_fields if len(f) > 6 and f not in MethodConfig.model_fields)
    typo = field[:-1] + ("x" if field[-1] != "x" else "y")
    for build in (lambda: cls(**{typo: 1}), lambda: cls().replace(**{typo: 1})):
        with pytest.raises(ConfigError) as err:
            build()
        msg = str(err.value)
        assert f"did you mean {field!r}" in msg and "\n" not in msg and cls.__name__ in msg


@pytest.mark.parametrize("spec", METHODS, ids=IDS)
def test_wrong_types_and_values_are_refused_in_one_line(spec):
    cls = spec.config_class
    with pytest.raises(ConfigError, match=r"\.limit") as err:
        cls(limit="many")
    assert "\n" not in str(err.value)
    with pytest.raises(ConfigError, match="0 = all"):
        cls(limit=-1)


def test_a_renamed_parameter_names_its_new_name():
    cfg = get_method("simgrag").config_class
    with pytest.raises(ConfigError, match="renamed to 'entity_topk'"):
        cfg(node_topk=3)
    with pytest.raises(ConfigError, match="renamed to 'variants'"):
        get_method("vector_rerank").config_class(variant="naive")


def test_a_choice_field_names_its_choices_and_the_closest():
    with pytest.raises(ConfigError, match=r"'llm', 'oracle' or 'copied' \(did you mean 'oracle'\?\)"):
        get_method("simgrag").config_class(pattern_source="orcale")


@pytest.mark.parametrize("spec", METHODS, ids=IDS)
def test_from_params_ignores_unrelated_names(spec):
    cls = spec.config_class
    namespace = {"__name__": "__main__", "In": [], "pd": object(), "run_name": "x", "example": 3,
                 "seed": 7, "limit": 0}
    cfg = cls.from_params(namespace)
    assert cfg.seed == 7 and cfg.limit == 0
    assert cfg.to_dict() == {**cls.defaults(), "seed": 7, "limit": 0}


@pytest.mark.parametrize("spec", METHODS, ids=IDS)
def test_notebook_parameter_defaults_equal_the_config_defaults(spec):
    """One source of defaults: every config field is a notebook parameter with the same literal."""
    params = runner.notebook_parameters(spec.notebook)
    defaults = spec.config_class.defaults()
    missing = sorted(set(defaults) - set(params))
    assert not missing, f"{spec.notebook} lacks config fields {missing}"
    differ = {k: (params[k], v) for k, v in defaults.items() if params[k] != v}
    assert not differ, f"{spec.notebook} parameter != {spec.config_class.__name__} default: {differ}"
    assert params["run_name"] == ""
    # the notebook builds its config from its own defaults without error
    assert spec.config_class.from_params(params).to_dict() == defaults


@pytest.mark.parametrize("spec", list(REGISTRY.values()), ids=list(REGISTRY))
def test_run_parameters_are_every_notebook_parameter_but_run_name(spec):
    params = runner.notebook_parameters(spec.notebook)
    namespace = {**params, "unrelated": 1, "run_name": "r"}
    assert spec.run_parameters(namespace) == {k: v for k, v in params.items() if k != "run_name"}


# ----------------------------------------------------------------------------- one run for every method
import inspect  # noqa: E402

from cases import CASES  # noqa: E402
from kgrag_utils.methods.base import Method, SystematicFailure  # noqa: E402
from kgrag_utils.records import RunRecorder  # noqa: E402


@pytest.mark.parametrize("spec", METHODS, ids=IDS)
def test_every_method_has_the_same_run_and_prepare(spec):
    cls = spec.method_class
    assert issubclass(cls, Method) and cls.name == spec.name
    assert list(inspect.signature(cls.run).parameters) == ["self", "items", "recorder", "progress"]
    assert cls.run is Method.run  # one implementation: resume, isolation, progress
    assert list(inspect.signature(cls.prepare).parameters)[:2] == ["config", "dataset"]  # a classmethod


def test_every_method_has_one_smoke_case():
    assert sorted(CASES) == sorted(IDS)  # tests/cases.py: one small MethodCase subclass per registered method


def _prepared(name):
    """Each method on its sample data, without an LLM (the no-LLM variants), with a stand-in embedder."""
    return CASES[name].prepared()


@pytest.mark.parametrize("name", IDS)
def test_an_example_that_raises_is_recorded_as_its_failure_and_the_run_goes_on(name, monkeypatch):
    method, ds = _prepared(name)
    bad = method.item_id(ds.items[1])
    inner = method._run_batch

    def flaky(batch):
        if any(method.item_id(it) == bad for it in batch):
            raise RuntimeError("boom on one example")
        return inner(batch)

    monkeypatch.setattr(method, "_run_batch", flaky)
    rec = RunRecorder(name, {"test": "isolation"}, run_name=f"isolation-{name}")
    records = method.run(ds.items, recorder=rec, progress=False)
    assert [r["id"] for r in records] == [method.item_id(it) for it in ds.items]
    failed = [r for r in records if r.get("error")]
    assert [r["id"] for r in failed] == [bad] and failed[0]["failed"] and "boom on one example" in failed[0]["error"]
    assert all(not r.get("error") for r in records if r["id"] != bad)
    assert len(rec.examples) == len(ds.items)  # the failure is recorded too
    # resume: nothing is redone, the records come back in item order
    monkeypatch.setattr(method, "_run_batch", lambda batch: pytest.fail("resumed items must not run again"))
    again = RunRecorder(name, {"test": "isolation"}, run_name=f"isolation-{name}")
    assert [r["id"] for r in method.run(ds.items, recorder=again, progress=False)] == [r["id"] for r in records]


class _Toy(Method):
    name = "toy"

    @classmethod
    def summary_hooks(cls):
        from kgrag_utils.methods.summary import SummaryHooks

        return SummaryHooks(record_scores=lambda r: {"toy": {"value": float(r["value"])}})

    def __init__(self, fail):
        self.config = get_method("kgp").config_class(reader=False, traversal="tfidf")
        self.fail = fail

    def _run_batch(self, batch):
        if any(self.fail(q) for q in batch):
            raise ValueError(f"cannot do {batch}")
        return [{"id": q, "value": q * 2} for q in batch]

    def item_id(self, item):
        return item


def test_a_run_whose_first_examples_all_raise_stops_with_a_systematic_failure():
    with pytest.raises(SystematicFailure, match="all of the first 3 examples raised"):
        _Toy(lambda q: True).run(list(range(10)), progress=False)
    out = _Toy(lambda q: q == 0).run(list(range(10)), progress=False)  # one bad example: the run goes on
    assert len(out) == 10 and out[0]["error"].startswith("ValueError")
    assert out[5] == {"id": 5, "value": 10, "scores": {"toy": {"value": 10.0}}}


def test_a_batched_run_counts_all_its_llm_calls_on_one_bar_per_batch_and_only_during_the_run():
    from types import SimpleNamespace

    from kgrag_utils.llm.fake_backend import FakeLLM

    class Batched(_Toy):
        def __init__(self):
            super().__init__(lambda q: False)
            self.config = SimpleNamespace(batch_size=4)
            self.llm, self.seen = FakeLLM(None), []

        def _run_batch(self, batch):
            bar = self.llm.call_bar
            for q in batch:  # one generate call per question, as SimGRAG's anchored schemas make
                self.llm.generate([f"question {q}"])
            self.seen.append(None if bar is None else (bar, bar.n, bar is self.llm.call_bar))
            return super()._run_batch(batch)

    toy = Batched()
    toy.run(list(range(10)), progress=True)
    assert [s[1:] for s in toy.seen] == [(4, True), (4, True), (2, True)]  # every call of a batch on its one bar
    bars = [s[0] for s in toy.seen]
    assert bars[0] is not bars[1] and bars[1] is not bars[2] and toy.llm.call_bar is None  # a bar per batch, none after
    toy.seen.clear()
    toy.run(list(range(10, 20)), progress=False)
    assert toy.seen == [None, None, None]


# ----------------------------------------------------------------------------- summaries, scores, report
import re  # noqa: E402
from pathlib import Path  # noqa: E402

from kgrag_utils.methods.scoring import SCORE_COLUMNS  # noqa: E402


@pytest.mark.parametrize("spec", METHODS, ids=IDS)
def test_every_method_exposes_the_same_five_names_and_two_modules(spec):
    pkg = spec.module()
    for cls in (spec.config_class, spec.method_class, spec.record_type):
        assert getattr(pkg, cls.__name__) is cls, cls
    assert callable(pkg.summarize) and callable(pkg.scores)
    assert "TypedDict" in type(spec.record_type).__name__ or hasattr(spec.record_type, "__annotations__")
    assert callable(spec.published.rows) and spec.published.OUR_METRICS and spec.figures.__name__.endswith(".figures")
    assert isinstance(spec.published.PAPER, dict) and spec.published.PAPER  # the paper's numbers, one name everywhere
    for row in spec.published.rows():
        assert row["method"] == spec.name and row["source"] and 0 <= row["value"] <= 100


@pytest.mark.parametrize("name", IDS)
def test_summarize_and_scores_count_failures_and_give_long_form_rows(name, monkeypatch):
    method, ds = _prepared(name)
    bad = method.item_id(ds.items[0])
    inner = method._run_batch
    monkeypatch.setattr(method, "_run_batch", lambda batch: (_ for _ in ()).throw(RuntimeError("x"))
                        if any(method.item_id(it) == bad for it in batch) else inner(batch))
    records = method.run(ds.items, progress=False)
    spec = get_method(name)
    summary = spec.summarize(records)
    assert summary["n"] == len(ds.items) and summary["n_errors"] == 1 and summary["n_failed"] >= 1
    assert isinstance(summary["stage_errors"], dict) and isinstance(summary["cost"], dict)
    run = {"run_name": "r-shard0of2", "params": {"dataset": ds.name, "split": ds.split, "llm_preset": "p"}}
    rows = spec.module().scores(summary, run=run)
    assert rows and all(list(r) == SCORE_COLUMNS for r in rows)
    assert all(r["method"] == name and r["dataset"] == ds.name and r["group"] == "r" and r["definition"] for r in rows)
    assert all(r["n"] == len(ds.items) for r in rows if "answerable" not in r["variant"])
    assert summary["stage_errors"]["raised an error"] == 1.0
    # the record carries its per-variant metric values, and the summary's means are theirs
    assert all(isinstance(r["scores"], dict) for r in records) and records[0]["scores"] == {}
    for variant, means in summary["scores"].items():
        for metric, value in means.items():
            vals = [(r["scores"].get(variant) or {}).get(metric, 0.0) for r in records]
            kept = [v for v in vals if v is not None]
            assert value == pytest.approx(sum(kept) / len(kept)), (variant, metric)


def test_report_has_no_method_specific_branch():
    """report.py iterates the registry: no registered method's name appears in it."""
    text = (Path(__file__).resolve().parents[1] / "kgrag_utils" / "report.py").read_text(encoding="utf-8")
    code = re.sub(r'"""[\s\S]*?"""', "", text)  # docstrings may explain; code may not branch
    for spec in REGISTRY.values():
        if spec.kind == "report":
            continue
        assert not re.search(rf"\b{re.escape(spec.name)}\b", code), f"report.py names {spec.name!r}"


# ----------------------------------------------------------------------------- the grid summary
import json  # noqa: E402
import math  # noqa: E402

from kgrag_utils import settings  # noqa: E402
from kgrag_utils.records import to_jsonable  # noqa: E402
from kgrag_utils.runner import SUMMARY_COLUMNS, RunOutcome, summary_table  # noqa: E402


def _record(name, method, params, examples):
    d = settings.results_dir() / name
    d.mkdir(parents=True, exist_ok=True)
    summary = get_method(method).summarize(examples)
    (d / "run.json").write_text(json.dumps(to_jsonable({"run_name": name, "method": method, "status": "ok",
                                                         "params": params, "summary": summary})))
    (d / "examples.jsonl").write_text("")


def test_grid_summary_shows_each_methods_headline_strict_and_lenient():
    """Issue 17 case 13: SimGRAG's hits@1 lives in summary['all'] (was nan), vector rerank's in its variants (was
    missing); the table names the metric and stays at most 15 columns, one row per run."""
    _record("gs-sg", "simgrag", {"dataset": "metaqa-1hop", "llm_preset": "p", "pattern_source": "llm"},
            [{"id": str(i), "pattern_source": "llm", "answer_prompt": "a", "failed": i == 3,
              "hits@1": [1.0, 0.0, 0.0, 0.0][i], "containment": [1.0, 1.0, 0.0, 0.0][i]} for i in range(4)])
    _record("gs-vr", "vector_rerank", {"dataset": "musique", "llm_preset": "p"},
            [{"id": str(i), "task": "passages", "failed": False,
              "variants": {"naive": {"recall@2": [1.0, 0.0][i], "recall@5": [1.0, 0.5][i]},
                           "rerank": {"recall@2": [0.5, 0.0][i], "recall@5": [1.0, 0.0][i]}}} for i in range(2)])
    outcomes = [RunOutcome("01_simgrag.ipynb", "gs-sg", "ok", 3.0, {"dataset": "metaqa-1hop", "llm_preset": "p"}),
                RunOutcome("03_vector_rerank.ipynb", "gs-vr", "skipped", 0.0, {"dataset": "musique", "llm_preset": "p"}),
                RunOutcome("02_compact_relations.ipynb", "gs-missing", "failed", 1.0, {"dataset": "x"}, error="E: boom"),
                RunOutcome("05_report.ipynb", "gs-report", "ok", 1.0, {})]
    df = summary_table(outcomes)
    assert list(df.columns) == SUMMARY_COLUMNS and len(df.columns) <= 15 and len(df) == 4
    sg, vr, bad, rep = (df.iloc[i] for i in range(4))
    assert sg["method"] == "simgrag" and sg["metric"] == "hits@1 / containment"
    assert sg["strict"] == 0.25 and sg["lenient"] == 0.5 and sg["failures"] == 1 and sg["n"] == 4
    assert vr["metric"] == "recall@5 / recall@2" and vr["strict"] == 0.5 and vr["lenient"] == 0.25  # the rerank row
    assert bad["status"] == "failed" and bad["error"] == "E: boom" and bad["method"] == "compact"
    assert rep["method"] == "report" and rep["metric"] == ""


@pytest.mark.slow
def test_a_tiny_fake_llm_grid_writes_one_tidy_row_per_run(tmp_path):
    from kgrag_utils import runner

    grid = tmp_path / "tiny.yaml"
    grid.write_text("name: tiny\ntimeout: 900\ndefaults: {llm_preset: fake, limit: 2}\nruns:\n"
                    "  - notebook: 01_simgrag.ipynb\n"
                    "  - notebook: 03_vector_rerank.ipynb\n"
                    "  - notebook: 04_kgp.ipynb\n    parameters: {set_passages: 40, sweep_limit: 1, variants: [tfidf],"
                    " sweep_graphs: [tfidf], show_benchmarks: false}\n")
    outcomes = runner.run_grid(grid, progress=False)
    assert [o.status for o in outcomes] == ["ok", "ok", "ok"], [o.error for o in outcomes]
    csv = settings.runs_dir() / "tiny" / "summary.csv"
    md = settings.runs_dir() / "tiny" / "summary.md"
    import pandas as pd

    df = pd.read_csv(csv)
    assert len(df.columns) <= 15 and len(df) == 3 and md.read_text().count("\n") == 2 + 3
    assert list(df["method"]) == ["simgrag", "vector_rerank", "kgp"]
    for _, row in df.iterrows():
        assert isinstance(row["metric"], str) and row["metric"], row.to_dict()
        assert not math.isnan(float(row["strict"])) and not math.isnan(float(row["lenient"])), row.to_dict()
        assert row["n"] == 2 and row["status"] == "ok"


def _pipeline_files(folder: Path) -> list[Path]:
    """method.py and the stages/ modules it imports, directly or through other stages."""
    seen, todo = [], [folder / "method.py"]
    while todo:
        path = todo.pop()
        if path in seen or not path.is_file():
            continue
        seen.append(path)
        text = path.read_text(encoding="utf-8")
        pattern = r"^\s*from \.stages\.(\w+) import|^\s*from \.stages import (\w+)" if path.parent == folder \
            else r"^\s*from \.(\w+) import|^\s*from \. import (\w+)"
        todo += [folder / "stages" / f"{a or b}.py" for a, b in re.findall(pattern, text, re.M)]
    return seen


def test_the_stages_never_import_the_summary_hooks_and_nothing_calls_the_old_summary_names():
    """One road from records to scores: a method's summary.py is pure functions its class (method.py) and the
    stages it runs (the stages/ modules method.py imports, and theirs) do not import, and the old per-method summary
    functions are gone everywhere (package, benchmarks, tests, notebooks). (A stages/ module that analyses finished
    runs, such as kgp's sweeps, may summarize them.)"""
    root = Path(__file__).resolve().parents[1]
    for spec in METHODS:
        folder = root / Path(*spec.package.split("."))
        assert (folder / "summary.py").exists(), spec.name
        for path in _pipeline_files(folder):
            up = "." if path.parent == folder else ".."
            text = path.read_text(encoding="utf-8")
            dots = re.escape(up)
            assert not re.search(rf"^\s*from {dots}summary import|^\s*from {dots} import .*\bsummary\b|"
                                 rf"import [\w.]*{spec.name}\.summary\b", text, re.M), path
    old = re.compile(r"\bsummarize_(records|run|kgqa)\b|\bfrom \.protocol import\b|\bCompactMethod\b|\bSimGRAGSettings\b")
    files = [*root.glob("kgrag_utils/**/*.py"), *root.glob("benchmarks/**/*.py"), *root.glob("notebooks/*.ipynb"),
             *(p for p in root.glob("tests/*.py") if p.name != "test_protocol.py")]
    hits = [f"{p.relative_to(root)}" for p in files if old.search(p.read_text(encoding="utf-8"))]
    assert not hits, hits
