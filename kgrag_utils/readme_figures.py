"""The README's figures (`figures/demo/`): which run figure each is copied from, and a manifest recording the
drawing code each was drawn with, so that a test fails when the code changed and the figure did not.

    make demo                                   # runs every notebook; figures/<name>__<run>.png
    python -m kgrag_utils.readme_figures        # copies the newest of each into figures/demo/, writes the manifest
    python -m kgrag_utils.readme_figures check  # lists README figures older than their drawing code

The manifest (`figures/demo/MANIFEST.json`) holds, per figure, the run figure it came from and a SHA-256 of
each drawing source: a whole module (`path`) or one function of it (`path:function`, its source text), so a
change elsewhere in a large module does not count. The notebook cell that calls the drawing is not hashed
(the notebooks change for other reasons).
"""

from __future__ import annotations

import ast
import hashlib
import json
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path

from . import settings
from .errors import ConfigError
from .methods.base import figure_name

__all__ = ["FIGURES", "MANIFEST", "code_hashes", "update", "stale"]

MANIFEST = "MANIFEST.json"
_GRAPH = ("kgrag_utils/graph_drawing.py", "kgrag_utils/labels.py", "kgrag_utils/plotting.py")


@dataclass(frozen=True)
class ReadmeFigure:
    source: str  # the run figure's stem before "__<run>" (figure_name without a run); "" = not drawn by a run
    code: tuple[str, ...]  # drawing sources: "path" or "path:function", relative to the repository root
    note: str = ""


FIGURES: dict[str, ReadmeFigure] = {
    "quickstart_sample-movies-2hop_chain.png": ReadmeFigure(
        figure_name("quickstart", "sample-movies-2hop", "chain"), _GRAPH),
    "simgrag_sample-movies-2hop_worked_example.png": ReadmeFigure(
        figure_name("simgrag", "sample-movies-2hop", "worked_example"),
        _GRAPH + ("kgrag_utils/methods/simgrag/figures.py:draw_worked_example",)),
    "vector_rerank_sample-passages_worked_example.png": ReadmeFigure(
        figure_name("vector_rerank", "sample-passages", "worked_example"),
        _GRAPH + tuple(f"kgrag_utils/methods/vector_rerank/figures.py:{f}"
                       for f in ("worked_example_edges", "draw_worked_example"))),
    "report_accuracy_vs_cost.png": ReadmeFigure(
        figure_name("report", "", "accuracy_vs_cost"),
        ("kgrag_utils/report.py:cost_figure", "kgrag_utils/labels.py", "kgrag_utils/plotting.py")),
    "explorer.png": ReadmeFigure(
        "", tuple(f"kgrag_utils/explore/graphs.py:{f}" for f in ("to_plotly", "_edge_traces", "_arrow_trace",
                                                                   "layout_positions", "_spring")),
        note="a JupyterLab screenshot of the live explorer (tests/browser_lab.py drives the browser), not written by "
             "make demo: take a new one by hand when this code changes"),
}


def _source(spec: str, root: Path) -> bytes:
    path, _, func = spec.partition(":")
    text = (root / path).read_text(encoding="utf-8")
    if not func:
        return text.encode("utf-8")
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.name == func:
            return (ast.get_source_segment(text, node) or "").encode("utf-8")
    raise ConfigError(f"{path} has no function {func!r}: update kgrag_utils/readme_figures.py's FIGURES.")


def code_hashes(figure: ReadmeFigure, root: Path | None = None) -> dict[str, str]:
    root = root or settings.repo_root()
    return {spec: hashlib.sha256(_source(spec, root)).hexdigest() for spec in figure.code}


def _demo_dir(root: Path | None) -> Path:
    return (root or settings.repo_root()) / "figures" / "demo"


def read_manifest(root: Path | None = None) -> dict:
    path = _demo_dir(root) / MANIFEST
    return json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}


def update(figures_dir: Path | None = None, root: Path | None = None, names=None) -> list[str]:
    """Copy the newest run figure of each README figure (or of `names`) into figures/demo/ and record its
    drawing code's hashes; returns the names updated. A figure with no run figure is an error naming it."""
    figures_dir = Path(figures_dir) if figures_dir else settings.figures_dir(create=False)
    demo = _demo_dir(root)
    manifest = read_manifest(root)
    done = []
    for name in names or [n for n, f in FIGURES.items() if f.source]:
        fig = FIGURES[name]
        found = sorted(figures_dir.glob(f"{fig.source}__*.png"), key=lambda p: (p.stat().st_mtime, p.name))
        if not found:
            raise ConfigError(f"no figure {fig.source}__<run>.png in {figures_dir}: run `make demo` first.")
        shutil.copyfile(found[-1], demo / name)
        manifest[name] = {"from": found[-1].name, "code": code_hashes(fig, root)}
        done.append(name)
    for name, fig in FIGURES.items():  # figures no run writes: their entry records the code as it is now
        if not fig.source and name not in manifest:
            manifest[name] = {"from": "", "note": fig.note, "code": code_hashes(fig, root)}
    (demo / MANIFEST).write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    return done


def stale(root: Path | None = None) -> list[str]:
    """One line per README figure whose drawing code changed since it was drawn (or with no manifest entry)."""
    manifest = read_manifest(root)
    out = []
    for name, fig in FIGURES.items():
        recorded = (manifest.get(name) or {}).get("code")
        if recorded is None:
            out.append(f"figures/demo/{name} has no entry in figures/demo/{MANIFEST}")
            continue
        now = code_hashes(fig, root)
        changed = sorted(spec for spec in set(now) | set(recorded) if now.get(spec) != recorded.get(spec))
        if changed:
            out.append(f"figures/demo/{name} is older than {', '.join(changed)}: regenerate it "
                       f"(`make demo`, then `python -m kgrag_utils.readme_figures`)")
    return out


def main(argv: list[str]) -> int:
    if argv[:1] == ["check"]:
        problems = stale()
        print("\n".join(problems) or "every README figure is as new as its drawing code")
        return 1 if problems else 0
    for name in update(names=argv or None):
        print("updated figures/demo/" + name)
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main(sys.argv[1:]))
