"""The book (`make book`): a static site of the executed reproductions, built offline with nbconvert.

Every `runs/repro-*/` folder (one reproduction: `kgrag repro TABLE [...]`) becomes a section of `index.html`:
its table (`table.md`, the run records' numbers) whose run links open the executed notebooks, each converted
to one HTML page with its figures inside (`<folder>/<run>.html`), the report when the reproduction ran it, and
the grid summary. A reader sees every table with its notebooks, figures and error analysis without running
anything; nothing is fetched to build it.
"""

from __future__ import annotations

import html
import re
import shutil
from pathlib import Path

from .. import settings
from ..errors import ConfigError

__all__ = ["build_book", "notebook_page"]

_STYLE = """body{font-family:system-ui,sans-serif;max-width:1100px;margin:2em auto;padding:0 1em;color:#222}
table{border-collapse:collapse;margin:1em 0}th,td{border:1px solid #ccc;padding:4px 8px;text-align:left}
th{background:#f3f3f3}h2{margin-top:2em;border-bottom:1px solid #ddd}code{background:#f6f6f6;padding:0 3px}
.muted{color:#666;font-size:90%}"""


def notebook_page(notebook: Path, out: Path) -> Path:
    """One executed notebook as one HTML page (its images embedded as data URIs)."""
    from nbconvert import HTMLExporter
    from nbconvert.preprocessors import TagRemovePreprocessor

    exporter = HTMLExporter(template_name="lab")
    # the Colab badge (an image from the web) and the install cell are for opening the notebook, not for reading a
    # run: left out, so that the page is whole offline
    exporter.register_preprocessor(TagRemovePreprocessor(remove_cell_tags=("colab-badge", "install"), enabled=True),
                                   enabled=True)
    body, _ = exporter.from_filename(str(notebook))
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(body, encoding="utf-8")
    return out


def _markdown(text: str) -> str:
    import mistune

    return mistune.create_markdown(plugins=["table"])(text)


def _section(folder: Path, out: Path) -> str:
    """A reproduction's part of the index, its notebooks converted under out/<folder name>/."""
    pages = []
    for nb in sorted(folder.glob("*.ipynb")):
        notebook_page(nb, out / folder.name / f"{nb.stem}.html")
        pages.append(nb.stem)
    table = folder / "table.md"
    parts = [f"<h2 id=\"{html.escape(folder.name)}\">{html.escape(folder.name)}</h2>"]
    if table.exists():
        text = re.sub(r"\]\(([^)/]+)\.ipynb\)",
                      lambda m: f"]({folder.name}/{m.group(1)}.html)" if m.group(1) in pages else f"]({m.group(1)}.ipynb)",
                      table.read_text(encoding="utf-8"))
        parts.append(_markdown(text))
    else:
        parts.append("<p class=\"muted\">no table yet: <code>kgrag repro TABLE --table</code> writes it.</p>")
    links = "".join(f"<li><a href=\"{html.escape(folder.name)}/{html.escape(s)}.html\">{html.escape(s)}</a></li>"
                    for s in pages)
    parts.append(f"<p>Executed notebooks ({len(pages)}):</p><ul>{links}</ul>")
    summary = folder / "summary.md"
    if summary.exists():
        parts.append("<details><summary>runs (grid summary)</summary>"
                     + _markdown(summary.read_text(encoding="utf-8")) + "</details>")
    return "\n".join(parts)


def build_book(out: Path | str | None = None, runs: Path | str | None = None) -> Path:
    """Build the site into `out` (default runs/book/, rebuilt from scratch); the folder."""
    runs = Path(runs) if runs is not None else settings.runs_dir(create=False)
    out = Path(out) if out is not None else runs / "book"
    folders = sorted(p for p in runs.glob("repro-*") if p.is_dir()) if runs.is_dir() else []
    if not folders:
        raise ConfigError(f"no executed reproductions in {runs} (runs/repro-*/): run one first, e.g. "
                          f"`kgrag repro headline --limit 2`.")
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    toc = "".join(f"<li><a href=\"#{html.escape(f.name)}\">{html.escape(f.name)}</a></li>" for f in folders)
    sections = "\n".join(_section(f, out) for f in folders)
    (out / "index.html").write_text(
        f"<!doctype html><html><head><meta charset=\"utf-8\"><title>KG-RAG notebooks: reproductions</title>"
        f"<style>{_STYLE}</style></head><body><h1>KG-RAG notebooks: the executed reproductions</h1>"
        f"<p>Each table comes from run records (<code>results/&lt;run&gt;/run.json</code>); each run links to the "
        f"notebook that made it, executed, with its figures. Rebuild: <code>make book</code>.</p>"
        f"<ul>{toc}</ul>{sections}</body></html>\n", encoding="utf-8")
    return out
