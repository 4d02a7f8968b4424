"""docs/EXTENDING.md's recipes, tried for real: a toy dataset (one loader file, one spec) and a toy fifth method (a
folder of four files, one registration) are written into a temporary folder, outside the package, and the toy
runs through the protocol (`Method.prepare` / `run`, `summarize`, `scores`) on the toy dataset with the fake LLM.
The code blocks of EXTENDING.md's recipes run as written (the dataset spec, the method protocol), with the toy's
loader and classes bound to the names they use. Nothing inside the repository is edited (checked on the package,
the notebooks and the test cases); what the toy registered is taken out again at the end."""

from __future__ import annotations

import hashlib
import importlib
import re
import sys
import textwrap
from pathlib import Path

import pytest

from kgrag_utils.datasets import load_dataset
from kgrag_utils.datasets import registry as dataset_registry
from kgrag_utils.datasets.traits import KIND_DEFAULTS
from kgrag_utils.errors import ConfigError
from kgrag_utils.llm import load_llm
from kgrag_utils.methods import get_method
from kgrag_utils.methods.base import REGISTERED
from kgrag_utils.methods.registry import entries
from kgrag_utils.methods.scoring import SCORE_COLUMNS

# ----------------------------------------------------------------------------- the recipe's files, as written

#: "A dataset": one loader file that builds the typed records and registers one spec
TOY_DATASET = '''
"""A toy KG-question dataset: three one-hop questions over five facts, built in code."""

from kgrag_utils.datasets import Dataset, DatasetSpec, KGQuestion, register_dataset
from kgrag_utils.kg import KG

FACTS = [("Heat", "directed_by", "Michael Mann"), ("Alien", "directed_by", "Ridley Scott"),
         ("Heat", "release_year", "1995"), ("Alien", "release_year", "1979"), ("Up", "directed_by", "Pete Docter")]
QUESTIONS = [("t1", "who directed [Heat]", "Heat", ["Michael Mann"]),
             ("t2", "when was [Alien] released", "Alien", ["1979"]),
             ("t3", "who directed [Up]", "Up", ["Pete Docter"])]


def _load_toy(spec, root, split, **options) -> Dataset:
    items = [KGQuestion(qid, text, [topic], answers, chain=None, hops=1, qtype="toy")
             for qid, text, topic, answers in QUESTIONS]
    return Dataset(spec.name, spec.kind, split, items, kg=KG.from_triples(FACTS, name=spec.name))


SPEC = register_dataset(DatasetSpec(name="toy-1hop", kind="kgqa", source="real", folder="", required=(),
                                    loader=_load_toy, splits=("test",),
                                    description="a toy: three one-hop questions over five facts, built in code"))
'''

#: "A method": config.py, method.py (the class), summary.py (the hooks) and __init__.py
TOY_METHOD = {
    "__init__.py": '''
"""A toy reader: the LLM reads the facts around the question's topic entity and answers."""

from .config import ToyConfig
from .method import Toy
from .summary import scores, summarize

__all__ = ["Toy", "ToyConfig", "summarize", "scores"]
''',
    "config.py": '''
from kgrag_utils.methods.base import MethodConfig


class ToyConfig(MethodConfig):
    dataset: str = "toy-1hop"  # a registered dataset name
    llm_preset: str = "fake"  # the test double
    max_facts: int = 10  # facts around the topic entity the reader sees
''',
    "method.py": '''
from kgrag_utils.methods.base import Method
from kgrag_utils.metrics import CONTAINMENT, HITS1, containment, hits_at_1

from .config import ToyConfig


class Toy(Method):
    name = "toy"
    notebook = "99_toy.ipynb"
    config_class = ToyConfig
    label = "a toy reader"

    def __init__(self, config: ToyConfig, kg, llm=None):
        self.config, self.kg, self._llm = config, kg, llm

    @classmethod
    def prepare(cls, config, dataset, *, llm=None, embedder=None, progress=None):
        if dataset.kind != "kgqa":
            raise ValueError("the toy reads KG questions")
        return cls(config, dataset.kg, llm)

    def facts(self, topic: str) -> list:
        _, _, edges = self.kg.neighbors(self.kg.entity_id(topic))
        return self.kg.triples(edges[: self.config.max_facts])

    def _run_batch(self, items):
        facts = [self.facts(q.topic_entities[0]) for q in items]
        lines = ["\\n".join(f"{h} | {r} | {t}" for h, r, t in fs) for fs in facts]
        prompts = [f"Facts:\\n{text}\\nQuestion: {q.question}" for q, text in zip(items, lines)]
        out = []
        for q, p, f, reply in zip(items, prompts, facts, self.llm.generate(prompts)):
            answer = reply.text.strip()
            out.append({"id": q.qid, "question": q.question, "answers": q.answers, "prompt": p, "n_facts": len(f),
                        "prediction": [answer], "failed": not answer,
                        HITS1: hits_at_1([answer], q.answers), CONTAINMENT: containment(reply.text, q.answers)})
        return out
''',
    "summary.py": '''
from kgrag_utils.methods import summary as shared
from kgrag_utils.methods.summary import SummaryHooks, record_value
from kgrag_utils.metrics import CONTAINMENT, HITS1


def record_scores(r):
    return {"toy reader": {HITS1: record_value(r, HITS1), CONTAINMENT: record_value(r, CONTAINMENT)}}


HOOKS = SummaryHooks(record_scores=record_scores)


def summarize(records):
    return shared.summarize(records, "toy", HOOKS)


def scores(summary, run=None):
    return shared.score_rows(summary, run)
''',
}


def _fake_reader(prompt: str) -> str:
    """The fake LLM's reply: the tail of the first fact it was shown (right for the first relation of a topic)."""
    first = prompt.split("Facts:\n", 1)[1].split("\n", 1)[0]
    return first.split(" | ")[2] if " | " in first else ""


ROOT = Path(__file__).resolve().parents[1]


def repository_files() -> dict[str, str]:
    """sha256 of every file a new method or dataset could be tempted to edit: the package's modules, the
    notebooks and the test cases."""
    paths = [p for p in (ROOT / "kgrag_utils").rglob("*.py") if "__pycache__" not in p.parts]
    paths += sorted((ROOT / "notebooks").glob("*.ipynb")) + [ROOT / "tests" / "cases.py"]
    return {str(p.relative_to(ROOT)): hashlib.sha256(p.read_bytes()).hexdigest() for p in paths}


def recipe_blocks() -> dict[str, str]:
    """EXTENDING.md's python code blocks, by the bold heading of the recipe they stand in ("A dataset.", ...)."""
    text = (ROOT / "docs" / "EXTENDING.md").read_text(encoding="utf-8")
    out = {}
    for heading, body in re.findall(r"\*\*(A [^*]+)\*\*(.*?)(?=\n\*\*A |\Z)", text, re.S):
        blocks = re.findall(r"```python\n(.*?)```", body, re.S)
        if blocks:
            out[heading.strip()] = blocks[0]
    return out


@pytest.fixture
def toy_folder(tmp_path, monkeypatch):
    """The toy dataset's loader file and the toy method's folder in a temporary folder on sys.path; what they
    register (the dataset spec, the method class, the modules) is removed afterwards, and no file of the
    repository changed meanwhile."""
    before = repository_files()
    (tmp_path / "toy_dataset.py").write_text(textwrap.dedent(TOY_DATASET))
    (tmp_path / "toy").mkdir()
    for name, text in TOY_METHOD.items():
        (tmp_path / "toy" / name).write_text(textwrap.dedent(text))
    monkeypatch.syspath_prepend(str(tmp_path))
    entries()  # the package's own methods registered first, so that only the toy's entries are taken out below
    specs, methods = set(dataset_registry._SPECS), set(REGISTERED)
    yield tmp_path
    assert set(REGISTERED) >= methods
    for name in set(dataset_registry._SPECS) - specs:
        del dataset_registry._SPECS[name]
    for name in set(REGISTERED) - methods:
        del REGISTERED[name]
    for module in [m for m in sys.modules if m == "toy_dataset" or m == "toy" or m.startswith("toy.")]:
        del sys.modules[module]
    after = repository_files()
    assert after == before, f"the recipes edited the repository: {sorted(k for k in after if after[k] != before.get(k))}"


def test_the_recipes_add_a_dataset_and_a_fifth_method_in_their_own_folder(toy_folder):
    files = sorted(str(p.relative_to(toy_folder)) for p in toy_folder.rglob("*.py"))
    assert files == ["toy/__init__.py", "toy/config.py", "toy/method.py", "toy/summary.py", "toy_dataset.py"]
    # the registrations: importing the loader file registers the dataset, importing the folder the method
    importlib.import_module("toy_dataset")
    toy = importlib.import_module("toy")
    spec = get_method("toy")
    assert spec.method_class is toy.Toy and spec.config_class is toy.ToyConfig and spec.kind == "method"
    assert spec.package == "toy" and spec.view is None  # no view.py: the run explorer shows the generic view

    config = spec.config_class.from_params({"limit": 0, "max_facts": 1, "unrelated": 1})
    ds = config.load_dataset()
    assert ds.name == "toy-1hop" and ds.traits.task == "qa" and len(ds.items) == 3  # the kind's default traits
    llm = load_llm("fake", responses=_fake_reader, cache=False)
    method = spec.method_class.prepare(config, ds, llm=llm)
    records = method.run(ds.items, progress=False)
    assert [r["id"] for r in records] == ["t1", "t2", "t3"]
    assert [r["prediction"] for r in records] == [["Michael Mann"], ["Ridley Scott"], ["Pete Docter"]]
    # t2's first fact of Alien is its director, not its year: the toy is wrong there, and the protocol says so
    assert [r["scores"]["toy reader"]["hits@1"] for r in records] == [1.0, 0.0, 1.0]
    summary = toy.summarize(records)
    assert summary["n"] == 3 and summary["n_errors"] == 0
    assert summary["scores"]["toy reader"]["hits@1"] == pytest.approx(2 / 3)
    rows = toy.scores(summary, run={"run_name": "toy-run", "params": {"dataset": ds.name, "split": "test",
                                                                       "llm_preset": "fake"}})
    assert rows and all(list(r) == SCORE_COLUMNS and r["method"] == "toy" for r in rows)


def test_an_example_that_raises_in_the_toy_is_its_failure_record(toy_folder, monkeypatch):
    importlib.import_module("toy_dataset")
    toy = importlib.import_module("toy")
    ds = load_dataset("toy-1hop")
    method = toy.Toy.prepare(toy.ToyConfig(), ds, llm=load_llm("fake", responses=_fake_reader, cache=False))
    inner = method._run_batch
    monkeypatch.setattr(method, "_run_batch", lambda batch: (_ for _ in ()).throw(RuntimeError("boom"))
                        if any(q.qid == "t2" for q in batch) else inner(batch))
    records = method.run(ds.items, progress=False)
    summary = toy.summarize(records)
    assert summary["n"] == 3 and summary["n_errors"] == 1 and summary["stage_errors"]["raised an error"] > 0


def test_a_taken_dataset_name_is_refused_in_one_line(toy_folder):
    importlib.import_module("toy_dataset")
    spec = dataset_registry.get_spec("toy-1hop")
    with pytest.raises(ConfigError, match="dataset name 'toy-1hop' is taken"):
        dataset_registry.register_dataset(dataset_registry.DatasetSpec(
            name="toy-1hop", kind="kgqa", source="real", folder="", required=(), loader=lambda *a, **k: None,
            splits=("test",), description="another"))
    assert dataset_registry.get_spec("toy-1hop") is spec


def test_the_dataset_recipe_code_registers_a_spec_with_its_traits(toy_folder):
    """EXTENDING.md's dataset spec, run as written (its loader: the toy's): the name is registered, its traits are
    what the spec says and otherwise its kind's defaults."""
    toy_dataset = importlib.import_module("toy_dataset")
    code = recipe_blocks()["A dataset."]
    exec(compile(code, "EXTENDING.md (A dataset.)", "exec"), {"_load_mine": toy_dataset._load_toy})
    [name] = re.findall(r'name="([^"]+)"', code)
    spec = dataset_registry.get_spec(name)
    assert spec.loader is toy_dataset._load_toy and spec.kind == "kgqa"
    assert spec.traits.question_style == "human"  # the one trait the recipe sets
    assert spec.traits == KIND_DEFAULTS["kgqa"].replace(question_style="human")


def test_the_method_recipe_code_runs_the_toy_through_the_protocol_and_records_it(toy_folder):
    """EXTENDING.md's protocol, run as written on the toy (`Mine` is the toy's class): config from the notebook's
    globals, prepare, a recorded run, the summary, the finished run record with its score rows."""
    from kgrag_utils.records import RunRecorder, read_run

    importlib.import_module("toy_dataset")
    toy = importlib.import_module("toy")
    ds = load_dataset("toy-1hop")
    rec = RunRecorder("toy", {"dataset": "toy-1hop", "llm_preset": "fake"}, run_name="toy-recipe")
    namespace = {"MineConfig": toy.ToyConfig, "Mine": toy.Toy, "summarize": toy.summarize, "items": ds.items,
                 "rec": rec, "max_facts": 2}  # a notebook's globals: one knob set in its parameters cell
    exec(compile(recipe_blocks()["A method."], "EXTENDING.md (A method.)", "exec"), namespace)
    assert namespace["config"].max_facts == 2 and isinstance(namespace["method"], toy.Toy)
    assert [r["id"] for r in namespace["records"]] == ["t1", "t2", "t3"]
    run = read_run(rec.run_dir)
    assert run["status"] == "ok" and run["summary"]["n"] == 3
    assert {r["variant"] for r in run["summary"]["rows"]} == {"toy reader"}
