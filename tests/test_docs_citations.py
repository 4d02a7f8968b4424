"""Citations of the project's docs point at files and anchors that exist in the repository.

Code comments, tests, benchmarks, notebooks, configs and the README cite `docs/<FILE>.md#anchor`.
This test fails when a cited file or anchor is missing, when a doc is cited without its `docs/`
folder (ambiguous), or when anything cites material outside the repository (the shared
specification or paper summaries). The docs' own relative links are checked the same way.
Anchors are GitHub heading slugs and explicit `<a id="...">` targets.
"""

from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
SCANNED = ("kgrag_utils", "tests", "benchmarks", "notebooks", "configs")
SUFFIXES = {".py", ".ipynb", ".yaml", ".yml", ".md", ".txt", ".toml", ".cfg"}
THIS = Path(__file__).resolve()

_DOC_NAMES = ("METHODS", "METRICS", "ARCHITECTURE", "MODELS", "MIGRATION")
#: docs/NAME.md or docs/NAME.md#anchor (any file name under docs/)
_CITED = re.compile(r"(?<![\w/.-])docs/([\w.-]+\.md)(#[\w-]+)?")
#: a doc named without its folder: METHODS.md ... not preceded by "docs/"
_BARE = re.compile(r"(?<![\w/.-])(" + "|".join(_DOC_NAMES) + r")\.md")
#: material outside the repository
_OUTSIDE = re.compile(r"shared/" + r"(?:docs|papers)")
_LINK = re.compile(r"\]\(([^)\s]+)\)")
_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
_HTML_ID = re.compile(r"""<a\s+(?:name|id)=["']([^"']+)["']""")


def _slug(text: str) -> str:
    """GitHub's heading anchor: lower case, punctuation except - and _ removed, spaces to hyphens."""
    text = re.sub(r"`|\*\*|__", "", text.strip().lower())
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


@lru_cache(maxsize=None)
def anchors(path: Path) -> frozenset[str]:
    """Every anchor a markdown file defines (heading slugs with GitHub's -1, -2 for repeats, and ids)."""
    seen: dict[str, int] = {}
    out: set[str] = set()
    in_fence = False
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.lstrip().startswith("```"):
            in_fence = not in_fence
            continue
        out.update(_HTML_ID.findall(line))
        m = None if in_fence else _HEADING.match(line)
        if m:
            base = _slug(m.group(2))
            n = seen.get(base, 0)
            seen[base] = n + 1
            out.add(base if n == 0 else f"{base}-{n}")
    return frozenset(out)


def _files() -> list[Path]:
    out = [ROOT / "README.md"]
    for top in SCANNED:
        for p in sorted((ROOT / top).rglob("*")):
            if p.is_file() and p.suffix in SUFFIXES and p.resolve() != THIS and "results" not in p.relative_to(ROOT).parts:
                out.append(p)
    return out


def citation_problems(path: Path, bare_ok: bool = False) -> list[str]:
    """Broken or out-of-repository doc citations in one file, as 'file:line: problem' strings."""
    return text_problems(path.read_text(encoding="utf-8", errors="replace"), str(path.relative_to(ROOT)), bare_ok)


def text_problems(text: str, rel: str, bare_ok: bool = False) -> list[str]:
    """As `citation_problems`; `bare_ok` accepts METHODS.md without docs/ (the docs' links to each other)."""
    problems = []
    for no, line in enumerate(text.splitlines(), 1):
        where = f"{rel}:{no}"
        if _OUTSIDE.search(line):
            problems.append(f"{where}: cites material outside the repository: {line.strip()[:120]}")
        for m in ([] if bare_ok else _BARE.finditer(line)):
            if not line[:m.start()].endswith("docs/"):
                problems.append(f"{where}: cite {m.group(0)} as docs/{m.group(0)}")
        for name, anchor in _CITED.findall(line):
            target = DOCS / name
            if not target.is_file():
                problems.append(f"{where}: docs/{name} does not exist")
            elif anchor and anchor[1:] not in anchors(target):
                problems.append(f"{where}: docs/{name} has no anchor {anchor}")
    return problems


def link_problems(doc: Path) -> list[str]:
    """Relative links inside one doc (other.md#anchor, #anchor) that point nowhere."""
    problems = []
    for no, line in enumerate(doc.read_text(encoding="utf-8").splitlines(), 1):
        for target in _LINK.findall(line):
            if re.match(r"[a-z]+:", target):
                continue  # http:, https:, mailto:
            file_part, _, anchor = target.partition("#")
            dest = (doc.parent / file_part).resolve() if file_part else doc
            if not dest.exists():
                problems.append(f"{doc.relative_to(ROOT)}:{no}: link to missing {file_part}")
            elif anchor and dest.suffix == ".md" and anchor not in anchors(dest):
                problems.append(f"{doc.relative_to(ROOT)}:{no}: {file_part or doc.name} has no anchor #{anchor}")
    return problems


def test_every_doc_citation_points_at_a_file_and_anchor_in_the_repository():
    problems = [p for f in _files() for p in citation_problems(f)]
    assert not problems, "\n".join(problems)


def test_links_inside_docs_resolve():
    docs = sorted(DOCS.glob("*.md"))
    assert docs, "docs/ holds no markdown files"
    problems = [p for d in [ROOT / "README.md", *docs] for p in link_problems(d)]  # the README's links and figures too
    problems += [p for d in docs for p in citation_problems(d, bare_ok=True)]
    assert not problems, "\n".join(problems)


def test_the_docs_that_code_relies_on_exist():
    for name in ("METHODS", "METRICS", "ARCHITECTURE", "MODELS"):
        assert (DOCS / f"{name}.md").is_file(), name
    for anchor in ("simgrag", "compact", "vector-rerank", "kgp", "simgrag-fidelity", "kgp-fidelity"):
        assert anchor in anchors(DOCS / "METHODS.md"), anchor


@pytest.mark.parametrize("text, problem", [
    ("see docs/METHODS.md#simgrag", None),
    ("see docs/METHODS.md#no-such-anchor", "has no anchor"),
    ("see docs/NOPE.md", "does not exist"),
    ("see " + "METHODS" + ".md section 3", "cite METHODS.md as docs/METHODS.md"),
    ("see ../shared/" + "papers/x.txt", "outside the repository"),
])
def test_the_checker_catches_each_kind_of_broken_citation(text, problem):
    found = text_problems(f"# {text}\n", "probe.py")
    if problem is None:
        assert found == []
    else:
        assert len(found) == 1 and problem in found[0], found


def test_slugs_follow_github():
    assert _slug("SimGRAG: fidelity decisions") == "simgrag-fidelity-decisions"
    assert _slug("Strict Hits@1") == "strict-hits1"
    assert _slug("Recall@k (set-based)") == "recallk-set-based"
    assert _slug("Vector retrieval + LLM rerank") == "vector-retrieval--llm-rerank"


JOURNAL = DOCS / "journal"
#: a journal file's name: the date its text gives (YYYY-MM-DD, or YYYY-MM where it spans several days) and a topic
_JOURNAL_NAME = re.compile(r"(\d{4}-\d{2})(?:-(\d{2}))?-[a-z0-9-]+\.md")


def _journal_files() -> list[Path]:
    return sorted(p for p in JOURNAL.glob("*.md") if p.name != "README.md")


def _journal_index() -> list[str]:
    """The files docs/journal/README.md lists, in its order (one `- [name](name): ...` line each)."""
    lines = (JOURNAL / "README.md").read_text(encoding="utf-8").splitlines()
    return [m.group(1) for line in lines if (m := re.match(r"- \[[^\]]+\]\(([^)#\s]+)\)", line))]


def journal_problems(files: list[Path], index: list[str]) -> list[str]:
    """Journal files missing from the index, dead or repeated index entries, the index not newest first,
    misnamed files, and files whose opening paragraph does not name the doc they came from."""
    names = [p.name for p in files]
    problems = [f"docs/journal/{n} is not listed in docs/journal/README.md" for n in names if n not in index]
    problems += [f"docs/journal/README.md lists {n}, which is not in docs/journal/" for n in index if n not in names]
    problems += [f"docs/journal/README.md lists {n} twice" for n in sorted(set(index)) if index.count(n) > 1]
    keys = []
    for n in index:
        m = _JOURNAL_NAME.fullmatch(n)
        keys.append(m.group(1) + "-" + (m.group(2) or "32") if m else "")  # a month counts as its end
    if keys != sorted(keys, reverse=True):
        problems.append("docs/journal/README.md is not newest first: " + ", ".join(index))
    for p in files:
        if not _JOURNAL_NAME.fullmatch(p.name):
            problems.append(f"docs/journal/{p.name}: name it YYYY-MM-DD-topic.md (or YYYY-MM-topic.md)")
        paragraphs = p.read_text(encoding="utf-8").split("\n\n")
        opening = paragraphs[1] if len(paragraphs) > 1 and paragraphs[0].startswith("# ") else ""
        sources = [s for s in re.findall(r"docs/([\w.-]+\.md)", opening) if (DOCS / s).is_file()]
        if not sources:
            problems.append(f"docs/journal/{p.name}: no '# title' then a paragraph naming the docs/<FILE>.md it came from")
    return problems


def test_the_journal_index_lists_every_journal_file_and_each_says_where_it_came_from():
    files = _journal_files()
    assert files, "docs/journal/ holds no journal file"
    problems = journal_problems(files, _journal_index())
    problems += [p for d in [JOURNAL / "README.md", *files] for p in link_problems(d)]
    problems += [p for d in files for p in citation_problems(d, bare_ok=True)]
    assert not problems, "\n".join(problems)


def test_the_journal_checker_catches_a_missing_a_dead_and_an_unordered_entry(tmp_path):
    old, new = tmp_path / "2026-12-01-a.md", tmp_path / "2026-12-06-b.md"
    old.write_text("# A\n\nMoved from docs/RESULTS.md on 2026-12-07.\n", encoding="utf-8")
    new.write_text("# B\n\nNo source named here.\n", encoding="utf-8")
    found = journal_problems([old, new], ["2026-12-01-a.md", "2026-12-09-gone.md"])
    assert any("2026-12-06-b.md is not listed" in p for p in found), found
    assert any("lists 2026-12-09-gone.md, which is not" in p for p in found), found
    assert any("not newest first" in p for p in found), found
    assert any("2026-12-06-b.md: no '# title'" in p for p in found), found
    assert not any("2026-12-01-a.md: no" in p for p in found), found
    assert journal_problems([old], ["2026-12-01-a.md"]) == []
