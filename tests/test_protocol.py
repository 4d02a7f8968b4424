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


def test_an_unknown_method_name_is_refused_naming_the_closest():
    with pytest.raises(ConfigError, match="did you mean 'simgrag'"):
        get_method("simgrg")


@pytest.mark.parametrize("spec", METHODS, ids=IDS)
def test_every_config_is_a_method_config_with_shared_run_fields(spec):
    cls = spec.config_class
    assert issubclass(cls, MethodConfig) and cls.__name__ == spec.config.rsplit(":", 1)[-1]
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
    with pytest.raises(ConfigError, match=r"'llm' or 'oracle' \(did you mean 'oracle'\?\)"):
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

from kgrag_utils.datasets import load_dataset  # noqa: E402
from kgrag_utils.embeddings import Embedder  # noqa: E402
from kgrag_utils.methods.base import Method, SystematicFailure  # noqa: E402
from kgrag_utils.records import RunRecorder  # noqa: E402
from stand_ins import HashBOW  # noqa: E402


@pytest.mark.parametrize("spec", METHODS, ids=IDS)
def test_every_method_has_the_same_run_and_prepare(spec):
    cls = spec.method_class
    assert issubclass(cls, Method) and cls.name == spec.name
    assert list(inspect.signature(cls.run).parameters) == ["self", "items", "recorder", "progress"]
    assert cls.run is Method.run  # one implementation: resume, isolation, progress
    assert list(inspect.signature(cls.prepare).parameters)[:2] == ["config", "dataset"]  # a classmethod


def _embedder():
    return Embedder(model=HashBOW(), model_id="hash-bow-protocol", cache=False)


def _prepared(name):
    """Each method on its sample data, without an LLM (the no-LLM variants), with a stand-in embedder."""
    spec = get_method(name)
    cfg = spec.config_class
    if name == "simgrag":
        ds = load_dataset("sample-movies-2hop", limit=6)
        return spec.method_class.prepare(cfg(pattern_source="oracle", reader=False, batch_size=3), ds,
                                         embedder=_embedder()), ds
    if name == "compact":
        ds = load_dataset("sample-movies-2hop", limit=6)
        return spec.method_class.prepare(cfg(reader=False, context="compact", batch_size=3), ds, embedder=_embedder()), ds
    ds = load_dataset("sample-passages", split="test" if name == "vector_rerank" else "all", limit=4)
    if name == "vector_rerank":
        return spec.method_class.prepare(cfg(variants=["naive", "expand"], batch_size=2), ds, embedder=_embedder()), ds
    return spec.method_class.prepare(cfg(traversal="tfidf", reader=False, set_passages=40), ds, embedder=_embedder()), ds


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
    assert len(out) == 10 and out[0]["error"].startswith("ValueError") and out[5] == {"id": 5, "value": 10}
