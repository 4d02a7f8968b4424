"""Issue 27's README target: the front page's reliability section lists what is refused, what survives and
what a shared results folder guarantees, and links the full account (docs/RELIABILITY.md)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_the_readme_reliability_section_lists_refused_survives_and_shared_folder_guarantees():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    match = re.search(r"^#{2,3} Reliability\n(.*?)(?=^#{1,3} )", readme, re.M | re.S)
    assert match, "README.md has no '## Reliability' / '### Reliability' section"
    section = match.group(1)
    bullets = [ln for ln in section.splitlines() if ln.startswith("- **")]
    for lead in ("Refused", "Survives", "A shared results folder guarantees"):
        assert any(b.startswith(f"- **{lead}") for b in bullets), f"no '{lead}' item in the README's reliability list"
    assert "docs/RELIABILITY.md" in section and (ROOT / "docs" / "RELIABILITY.md").is_file()
    for heading in ("What is refused", "What survives", "What a shared results folder guarantees"):
        assert f"## {heading}" in (ROOT / "docs" / "RELIABILITY.md").read_text(encoding="utf-8"), heading
