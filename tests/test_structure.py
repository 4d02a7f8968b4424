"""The package's floor plan, checked on its source (AST): what a newcomer adding a method or a dataset relies on.

* Methods ask the dataset (`dataset.traits`), never its name: no registered dataset name in a string
  literal of kgrag_utils/methods/, and no `startswith` on a prefix of one. Excepted: docstrings (usage
  examples), `published.py` (the papers' numbers, keyed by the datasets they were measured on) and a
  config field's default value (`dataset: str = "sample-movies-2hop"`: the one place of that default).
* `prepare` is a pure builder: it computes everything, then calls the constructor once; no attribute is
  assigned on the object it builds.
* Every method folder has the same rooms (`FLOOR`: docs/ARCHITECTURE.md#methods) and one subpackage, `stages/`
  (the algorithm's own modules); its `method.py` (the class) is at most 300 lines. The run explorer finds a
  method's view through the registry (`view.py` beside the class), so no module of kgrag_utils/explore/views
  is named after a method or names one.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

from kgrag_utils.datasets.registry import dataset_names

ROOT = Path(__file__).resolve().parents[1]
METHODS = ROOT / "kgrag_utils" / "methods"


def _exempt_constants(tree: ast.AST) -> set[int]:
    """ids of the string constants that may name a dataset: docstrings and a config class's field defaults."""
    out: set[int] = set()
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and body \
                and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
            out.add(id(body[0].value))
        if isinstance(node, ast.ClassDef) and node.name.endswith("Config"):  # a config field's default
            out.update(id(s.value) for s in node.body if isinstance(s, ast.AnnAssign) and isinstance(s.value, ast.Constant))
    return out


def dataset_name_uses(source: str, names: list[str]) -> list[tuple[int, str]]:
    """(line, literal) of each string literal that names a registered dataset (as a whole word), is a
    prefix of one ending in "-" ("fixture-"), or is the argument of a `startswith` that one starts with."""
    tree = ast.parse(source)
    exempt = _exempt_constants(tree)
    word = re.compile(r"(?<![\w-])(" + "|".join(map(re.escape, sorted(names, key=len, reverse=True))) + r")(?![\w-])")
    prefixes = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "startswith":
            prefixes.update(id(c) for a in node.args for c in ast.walk(a))
    hits = []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Constant) and isinstance(node.value, str)) or id(node) in exempt:
            continue
        v = node.value
        starts = any(n.startswith(v) for n in names) and len(v) >= 2
        if word.search(v) or (v.endswith("-") and starts) or (id(node) in prefixes and starts):
            hits.append((node.lineno, v))
    return sorted(hits)


def test_the_scan_finds_name_tables_and_strippers():
    names = ["factkg", "fixture-factkg", "pq-2hop", "webqsp"]
    code = ('HUMAN = ("webqsp", "cwq")\n'
            'def f(name):\n    """factkg in a docstring is fine."""\n'
            '    base = name[len("fixture-"):] if name.startswith("fixture-") else name\n'
            '    return name.startswith(("pq", "wc")) or "factkg" in name\n'
            'class CConfig:\n    dataset: str = "pq-2hop"\n'
            'class M:\n    kind: str = "webqsp"\n')
    assert [line for line, _ in dataset_name_uses(code, names)] == [1, 4, 4, 5, 5, 9]


def test_methods_never_compare_dataset_names():
    names = dataset_names()
    hits = [f"{p.relative_to(ROOT)}:{line}: {value[:80]!r}"
            for p in sorted(METHODS.rglob("*.py")) if p.name != "published.py"
            for line, value in dataset_name_uses(p.read_text(encoding="utf-8"), names)]
    assert not hits, "methods ask dataset.traits (datasets/traits.py), never the name:\n" + "\n".join(hits)


BUILDERS = ("prepare", "sibling")


def attribute_assignments(source: str, builders=BUILDERS) -> list[tuple[str, int, str]]:
    """(function, line, target) of each `obj.attr = ...` (or `+=`, or `setattr(obj, ...)`) inside a builder: a
    builder computes everything first, then calls the constructor once, and touches the object no more."""
    hits = []
    for fn in ast.walk(ast.parse(source)):
        if not (isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)) and fn.name in builders):
            continue
        for node in ast.walk(fn):
            targets = node.targets if isinstance(node, ast.Assign) else \
                [node.target] if isinstance(node, (ast.AugAssign, ast.AnnAssign)) else []
            hits += [(fn.name, node.lineno, ast.unparse(t)) for t in targets if isinstance(t, ast.Attribute)]
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "setattr":
                hits.append((fn.name, node.lineno, ast.unparse(node)))
    return sorted(hits, key=lambda h: h[1])


def test_the_builder_scan_finds_patches():
    code = ("class M:\n    @classmethod\n    def prepare(cls, c, d):\n        m = cls(c)\n        m.gate = 1\n"
            "        setattr(m, 'x', 2)\n        tuning = {}\n        tuning['k'] = 3\n        return m\n"
            "    def run(self):\n        self.done = True\n")
    assert [(f, line) for f, line, _ in attribute_assignments(code)] == [("prepare", 5), ("prepare", 6)]


def test_prepare_is_a_pure_builder():
    hits = [f"{p.relative_to(ROOT)}:{line}: {fn}: {target}"
            for p in sorted(METHODS.rglob("*.py"))
            for fn, line, target in attribute_assignments(p.read_text(encoding="utf-8"))]
    assert not hits, "prepare computes everything, then calls the constructor once:\n" + "\n".join(hits)


#: the top-level modules of every method folder (kgrag_utils/methods/<m>/), beside its one subpackage `stages/`
FLOOR = {"__init__", "config", "method", "record", "summary", "figures", "published", "prompts", "ask", "view"}
METHOD_MAX_LINES = 300


def method_folders() -> list[Path]:
    return sorted(p for p in METHODS.iterdir() if (p / "__init__.py").is_file())


def floor_problems(folder: Path) -> list[str]:
    """What differs from the floor plan in one method folder (empty: none)."""
    modules = {p.stem for p in folder.glob("*.py")}
    packages = {p.name for p in folder.iterdir() if p.is_dir() and p.name != "__pycache__"}
    out = [f"{folder.name}: missing {sorted(FLOOR - modules)}" if FLOOR - modules else "",
           f"{folder.name}: modules beyond the floor plan {sorted(modules - FLOOR)} (put them under stages/)"
           if modules - FLOOR else "",
           f"{folder.name}: subpackages {sorted(packages)}, expected ['stages']" if packages != {"stages"} else "",
           f"{folder.name}: stages/ is no package" if not (folder / "stages" / "__init__.py").is_file() else ""]
    method = folder / "method.py"
    lines = method.read_text(encoding="utf-8").count("\n") if method.is_file() else 0
    if lines > METHOD_MAX_LINES:
        out.append(f"{folder.name}: method.py has {lines} lines, more than {METHOD_MAX_LINES}")
    return [o for o in out if o]


def test_the_floor_plan_scan_finds_a_stray_module_and_a_long_method(tmp_path):
    folder = tmp_path / "toy"
    (folder / "stages").mkdir(parents=True)
    for name in FLOOR | {"stages/__init__"}:
        (folder / f"{name}.py").write_text("")
    assert floor_problems(folder) == []
    (folder / "pipeline.py").write_text("")
    (folder / "method.py").write_text("x = 1\n" * 301)
    (folder / "prompts.py").unlink()
    assert [p.split(":")[1].split()[0] for p in floor_problems(folder)] == ["missing", "modules", "method.py"]


def test_every_method_folder_has_the_same_rooms():
    folders = method_folders()
    assert len(folders) >= 4, folders
    problems = [p for f in folders for p in floor_problems(f)]
    assert not problems, "\n".join(problems)


def test_every_method_figures_module_names_the_common_roles_alike():
    """The same figure under the same name in every method (`methods/figure_roles.py`: the scores beside the
    paper's, the worked example, the questions lost at each stage); a method's extra figures keep their own."""
    import importlib

    from kgrag_utils.methods.figure_roles import FIGURE_ROLES

    folders = method_folders()
    missing = []
    for folder in folders:
        module = importlib.import_module(f"kgrag_utils.methods.{folder.name}.figures")
        missing += [f"{folder.name}/figures.py: no {name}" for name in FIGURE_ROLES
                    if not callable(getattr(module, name, None)) or name not in getattr(module, "__all__", ())]
    assert len(folders) >= 4 and not missing, "\n".join(missing)


def _registered_views() -> dict:
    from kgrag_utils.methods.registry import entries

    return {name: spec for name, spec in entries().items() if spec.kind in ("method", "tour")}


def test_the_explorer_finds_each_method_view_through_the_registry():
    from kgrag_utils.explore.views import view_for

    specs = _registered_views()
    assert {"simgrag", "compact", "vector_rerank", "kgp", "quickstart"} <= set(specs)
    for name, spec in specs.items():
        assert spec.view is not None and view_for(name) is spec.view, name
        assert spec.view.__name__.startswith(spec.package + "."), name
    assert view_for("report").__name__.endswith(".generic") and view_for("no-such-method").__name__.endswith(".generic")


def test_no_module_of_the_explorer_views_names_a_method():
    names = set(_registered_views())
    hits = []
    for path in sorted((ROOT / "kgrag_utils" / "explore" / "views").glob("*.py")):
        if path.stem in names:
            hits.append(f"{path.name}: named after a method")
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in names:
                hits.append(f"{path.name}:{node.lineno}: {node.value!r}")
    assert not hits, "a method's view lives in its folder (view.py), found through the registry:\n" + "\n".join(hits)


def test_every_method_picks_its_reader_from_one_mapping_of_dataset_kinds():
    """The dataset-kind switch of a method is one mapping, `kinds` (kind -> the class that reads it), which
    `prepare` reads through `Method.reader_for`; a kind not in it is refused in one line naming the kinds."""
    from types import SimpleNamespace

    import pytest

    from kgrag_utils.errors import ConfigError

    specs = {n: s for n, s in _registered_views().items() if s.kind == "method"}
    for name, spec in specs.items():
        cls = spec.method_class
        assert cls.kinds and "kinds" in vars(cls), name
        for kind in cls.kinds:
            assert issubclass(cls.reader_for(SimpleNamespace(kind=kind, name="d")), cls), (name, kind)
        with pytest.raises(ConfigError, match=r"reads .* datasets; 'd' is a nope dataset"):
            cls.reader_for(SimpleNamespace(kind="nope", name="d"))
    assert specs["vector_rerank"].method_class.reader_for(SimpleNamespace(kind="kgqa", name="d")).__name__ == "FactRerank"


# ----------------------------------------------------------------------------- the module map, sizes, import circles
MAP_DOC, MAP_ANCHOR = ROOT / "docs/ARCHITECTURE.md", "the-package-by-responsibility"
MAP_HEADER = "| module | responsibility |"


def links_to(doc: Path) -> set[tuple[Path, str]]:
    """(file, anchor) of each markdown link of a document, resolved from the document's folder."""
    targets = re.findall(r"\]\(([^)#\s]+)(?:#([^)\s]*))?\)", doc.read_text(encoding="utf-8"))
    return {((doc.parent / path).resolve(), anchor) for path, anchor in targets}


def test_one_module_map_names_every_module_and_the_other_docs_link_to_it():
    """docs/ARCHITECTURE.md holds the one module map (every top-level module and package of kgrag_utils named in
    its first column); README and docs/EXTENDING.md link to it and hold no map of their own."""
    text = MAP_DOC.read_text(encoding="utf-8")
    table = text.split("## The package, by responsibility", 1)[1].split("\n## ", 1)[0]
    assert MAP_HEADER in table
    named = {n.rstrip("/") for row in table.splitlines() if row.startswith("| `")
             for n in re.findall(r"`([\w/]+)`", row.split("|")[1])}
    package = ROOT / "kgrag_utils"
    modules = {p.stem for p in package.glob("*.py") if p.stem != "__init__"} | \
              {p.name for p in package.iterdir() if (p / "__init__.py").is_file()}
    assert not modules - named, f"modules missing from the map in docs/ARCHITECTURE.md: {sorted(modules - named)}"
    for doc in (ROOT / "README.md", ROOT / "docs" / "EXTENDING.md"):
        assert (MAP_DOC.resolve(), MAP_ANCHOR) in links_to(doc) and MAP_HEADER not in doc.read_text(encoding="utf-8"), doc.name


MAX_FILE_LINES, MAX_FUNCTION_LINES = 600, 80
#: files other work is cutting below the limits at the time of writing (the test fails once one is within them,
#: so that it leaves this list): path -> what it is over
PENDING: dict[str, str] = {}  # "path": "file" or "function NAME" over the limits, while another change cuts it


def size_problems(path: Path, max_file: int = MAX_FILE_LINES, max_function: int = MAX_FUNCTION_LINES) -> list[str]:
    """What in one Python file is over the size limits: the file's lines, each function's lines."""
    source = path.read_text(encoding="utf-8")
    out = [f"file ({source.count(chr(10))} lines)"] if source.count("\n") > max_file else []
    out += [f"function {node.name} ({node.end_lineno - node.lineno + 1} lines)" for node in ast.walk(ast.parse(source))
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.end_lineno - node.lineno + 1 > max_function]
    return out


def test_the_size_scan_finds_a_long_file_and_a_long_function(tmp_path):
    path = tmp_path / "m.py"
    path.write_text("def f():\n" + "    x = 1\n" * 5 + "\n" + "y = 2\n" * 3)
    assert size_problems(path, max_file=20, max_function=10) == []
    assert size_problems(path, max_file=8, max_function=5) == ["file (10 lines)", "function f (6 lines)"]


def test_no_file_over_600_lines_and_no_function_over_80():
    problems = {}
    for folder in ("kgrag_utils", "benchmarks", "tests"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            found = size_problems(path)
            if found:
                problems[str(path.relative_to(ROOT))] = found
    unexpected = {p: f for p, f in problems.items() if p not in PENDING}
    assert not unexpected, f"over {MAX_FILE_LINES} lines a file or {MAX_FUNCTION_LINES} a function: {unexpected}"
    within = sorted(set(PENDING) - set(problems))
    assert not within, f"within the limits now: take them out of PENDING: {within}"


def module_imports(package: Path) -> dict[str, set[str]]:
    """module -> the package's modules it imports (at any depth of its code, relative imports resolved); imports
    of a package's __init__ count as imports of the module named, where there is one."""
    mods = {".".join(p.relative_to(package.parent).with_suffix("").parts).removesuffix(".__init__"): p
            for p in package.rglob("*.py")}
    graph: dict[str, set[str]] = {m: set() for m in mods}
    for m, path in mods.items():
        here = m if path.name == "__init__.py" else m.rsplit(".", 1)[0]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parts = here.split(".")
                    base = ".".join(parts[: len(parts) - node.level + 1] + ([node.module] if node.module else []))
                targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in mods else base for a in node.names]
            elif isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            else:
                continue
            graph[m] |= {t for t in targets if t in mods and t != m and not m.startswith(t + ".")}
    return graph


def import_circles(graph: dict[str, set[str]], packages: set[str]) -> list[list[str]]:
    """The import circles among modules (edges into package __init__ modules left out: re-exports)."""
    import networkx as nx

    g = nx.DiGraph()
    g.add_nodes_from(m for m in graph if m not in packages)
    g.add_edges_from((m, t) for m, ts in graph.items() if m not in packages for t in ts if t not in packages)
    return [sorted(c) for c in nx.strongly_connected_components(g) if len(c) > 1]


def test_the_circle_scan_finds_a_circle(tmp_path):
    pkg = tmp_path / "pkg"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("from .a import x\n")
    (pkg / "a.py").write_text("from .sub import b\nx = 1\n")
    (pkg / "sub" / "__init__.py").write_text("")
    (pkg / "sub" / "b.py").write_text("def f():\n    from ..a import x\n    return x\n")
    (pkg / "c.py").write_text("import pkg.a\n")
    graph = module_imports(pkg)
    assert graph["pkg.c"] == {"pkg.a"} and graph["pkg.sub.b"] == {"pkg.a"}
    assert import_circles(graph, {"pkg", "pkg.sub"}) == [["pkg.a", "pkg.sub.b"]]


def test_no_import_circle_in_the_package():
    package = ROOT / "kgrag_utils"
    graph = module_imports(package)
    packages = {".".join(p.parent.relative_to(package.parent).parts) for p in package.rglob("__init__.py")}
    assert not import_circles(graph, packages)


# ----------------------------------------------------------------------------- one corrector, one mean
def _defs(source: str, kinds) -> list:
    return [n for n in ast.walk(ast.parse(source)) if isinstance(n, kinds)]


def speller_problems(path: Path, source: str) -> list[str]:
    """A class of its own that corrects spelling (named *Spell* or *Corrector*) outside kgrag_utils/spelling.py
    that does not build on the project's one corrector, `Respeller`."""
    classes = [c.name for c in _defs(source, ast.ClassDef) if re.search(r"spell|corrector", c.name, re.I)]
    uses = any(isinstance(n, ast.ImportFrom) and n.module and n.module.endswith("spelling")
               and any(a.name == "Respeller" for a in n.names) for n in ast.walk(ast.parse(source)))
    return [] if path.name == "spelling.py" and path.parent.name == "kgrag_utils" or uses else \
        [f"{path.name}: {name}" for name in classes]


def mean_problems(source: str) -> list[str]:
    """A private mean helper (`_mean`, `_means`, `_avg`, `_average`) that does not go through scoring.mean."""
    out = []
    for fn in _defs(source, (ast.FunctionDef, ast.AsyncFunctionDef)):
        if re.fullmatch(r"_(mean|means|avg|average)", fn.name):
            calls = {n.func.id for n in ast.walk(fn) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)}
            if "mean" not in calls:
                out.append(fn.name)
    return out


def test_the_speller_and_mean_scans_find_their_cases():
    own = "class TypoCorrector:\n    def fix(self, w):\n        return w\n"
    built = "from ...spelling import Respeller\nclass SpellingCorrector:\n    pass\n"
    assert speller_problems(Path("m.py"), own) == ["m.py: TypoCorrector"] and speller_problems(Path("m.py"), built) == []
    assert mean_problems("def _mean(xs):\n    return sum(xs) / len(xs)\n") == ["_mean"]
    assert mean_problems("def _mean(rows, k):\n    return mean(r[k] for r in rows)\n") == []


def test_one_spelling_corrector_and_the_protocols_mean():
    """The project's one spelling corrector is kgrag_utils/spelling.py's `Respeller` (compact's is it under its own
    rule); the methods' private mean helpers go through `methods.scoring.mean`."""
    package = ROOT / "kgrag_utils"
    spellers = [p for path in sorted(package.rglob("*.py"))
                for p in speller_problems(path, path.read_text(encoding="utf-8"))]
    means = [f"{path.relative_to(ROOT)}: {name}" for path in sorted(METHODS.rglob("*.py"))
             for name in mean_problems(path.read_text(encoding="utf-8"))]
    assert not spellers and not means, "\n".join(spellers + means)
