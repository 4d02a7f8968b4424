"""The README's figures are as new as the code that draws them (figures/demo/MANIFEST.json), and every
figure the README shows from figures/demo/ is listed there."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from kgrag_utils import readme_figures
from kgrag_utils.errors import ConfigError

ROOT = Path(__file__).resolve().parents[1]


def test_every_readme_figure_is_as_new_as_its_drawing_code():
    assert readme_figures.stale(ROOT) == []


def test_the_readme_shows_only_figures_the_manifest_tracks():
    shown = set(re.findall(r"\(figures/demo/([^)\s]+)\)", (ROOT / "README.md").read_text(encoding="utf-8")))
    assert shown and shown <= set(readme_figures.FIGURES)
    manifest = readme_figures.read_manifest(ROOT)
    for name in shown:
        assert (ROOT / "figures" / "demo" / name).is_file(), name
        assert manifest[name]["code"], name


def _copy_tree(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    for spec in {s.partition(":")[0] for f in readme_figures.FIGURES.values() for s in f.code}:
        (root / spec).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(ROOT / spec, root / spec)
    shutil.copytree(ROOT / "figures" / "demo", root / "figures" / "demo")
    return root


def test_a_change_to_the_drawing_code_makes_its_figures_stale(tmp_path):
    root = _copy_tree(tmp_path)
    assert readme_figures.stale(root) == []
    path = root / "kgrag_utils" / "graph_drawing.py"
    path.write_text(path.read_text(encoding="utf-8").replace("NODE_FONT = 9.0", "NODE_FONT = 8.5"), encoding="utf-8")
    stale = readme_figures.stale(root)
    assert len(stale) == 3 and all("kgrag_utils/graph_drawing.py" in s for s in stale)  # the three graph drawings
    # a change outside the hashed function of a large module does not count
    report = root / "kgrag_utils" / "report.py"
    report.write_text(report.read_text(encoding="utf-8") + "\n# an unrelated comment\n", encoding="utf-8")
    assert len(readme_figures.stale(root)) == 3


def test_update_copies_the_newest_run_figure_and_records_its_code(tmp_path):
    root = _copy_tree(tmp_path)
    figures = tmp_path / "figures"
    figures.mkdir()
    name = "quickstart_sample-movies-2hop_chain.png"
    (figures / "quickstart_sample-movies-2hop_chain__00_quickstart-abc.png").write_bytes(b"new figure")
    assert readme_figures.update(figures, root, names=[name]) == [name]
    assert (root / "figures" / "demo" / name).read_bytes() == b"new figure"
    entry = json.loads((root / "figures" / "demo" / readme_figures.MANIFEST).read_text())[name]
    assert entry["from"] == "quickstart_sample-movies-2hop_chain__00_quickstart-abc.png"
    with pytest.raises(ConfigError, match="make demo"):
        readme_figures.update(figures, root, names=["report_accuracy_vs_cost.png"])
