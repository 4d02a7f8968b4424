"""The embedded default: small sample datasets the project generates itself, in the real formats.

`ensure_sample(kind)` writes one sample under `settings.sample_dir()` (if missing, outdated or
`force`) and returns that root, so the loaders read `<root>/MetaQA`, `<root>/CLUTRR` and
`<root>/SamplePassages` exactly as they read the real benchmark copies.

Generation is seeded and byte-for-byte deterministic. Writing is safe when several processes
(parallel notebook kernels, test workers) call it at once: every file goes to a temporary file in
its own folder and is moved into place with `os.replace`, and a marker file holding the content
version and the file digests is written last; a sample counts as present only when its marker
matches this version and every file it lists exists with the recorded size and sha256 (re-hashed
only when a file's size or mtime changed); a sample that does not is generated again.
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path
from typing import Callable

from .. import settings
from ..errors import ConfigError
from ..fileio import atomic_write_bytes
from .sample_kinship import generate_kinship
from .sample_movies import generate_movies
from .sample_passages import generate_passages

__all__ = ["SAMPLE_KINDS", "SAMPLE_VERSION", "SAMPLE_SEED", "ensure_sample", "generate_sample",
           "marker_path", "sample_is_current", "generate_movies", "generate_kinship", "generate_passages"]

#: Bump when any generator's output changes, so existing sample folders are regenerated.
SAMPLE_VERSION = 1
SAMPLE_SEED = 0

SAMPLE_KINDS: dict[str, Callable[..., dict[str, str]]] = {
    "movies": generate_movies,
    "kinship": generate_kinship,
    "passages": generate_passages,
}
_MARKER_DIR = ".sample-markers"


def _check_kind(kind: str) -> None:
    if kind not in SAMPLE_KINDS:
        raise ConfigError(f"unknown sample kind {kind!r}: use one of {', '.join(SAMPLE_KINDS)}.")


def generate_sample(kind: str, seed: int = SAMPLE_SEED) -> dict[str, bytes]:
    """Relative path -> file bytes of one sample (UTF-8, LF line endings), without writing anything."""
    _check_kind(kind)
    return {rel: text.encode("utf-8") for rel, text in SAMPLE_KINDS[kind](seed=seed).items()}


def marker_path(kind: str, root: Path | None = None) -> Path:
    """Where the marker of a sample lives (written after all of its files)."""
    _check_kind(kind)
    base = settings.sample_dir(create=False) if root is None else Path(root)
    return base / _MARKER_DIR / f"{kind}.json"


def _read_marker(kind: str, root: Path) -> dict | None:
    try:
        with open(marker_path(kind, root), encoding="utf-8") as fh:
            marker = json.load(fh)
    except (OSError, ValueError):
        return None
    return marker if isinstance(marker, dict) else None


def sample_is_current(kind: str, root: Path | None = None) -> bool:
    """True when the sample's marker matches this version and seed and all its files are in place."""
    base = settings.sample_dir(create=False) if root is None else Path(root)
    marker = _read_marker(kind, base)
    if not marker or marker.get("version") != SAMPLE_VERSION or marker.get("seed") != SAMPLE_SEED:
        return False
    from ..integrity import files_match

    return files_match(base, marker.get("files"))  # size and sha256 (re-hashed only after a change of size or mtime)


def ensure_sample(kind: str, force: bool = False) -> Path:
    """Write the sample `kind` ("movies", "kinship" or "passages") if needed; return the sample root.

    Layout under the root: movies -> MetaQA/, kinship -> CLUTRR/, passages -> SamplePassages/.
    """
    _check_kind(kind)
    root = settings.sample_dir(create=True)
    if not force and sample_is_current(kind, root):
        return root
    if not force and _read_marker(kind, root) is not None:
        print(f"sample {kind!r} in {root} is outdated or was changed on disk: regenerating it", file=sys.stderr)
    files = generate_sample(kind)
    for rel, data in files.items():
        atomic_write_bytes(root / rel, data)
    marker = {
        "kind": kind,
        "version": SAMPLE_VERSION,
        "seed": SAMPLE_SEED,
        "files": {rel: {"size": len(data), "sha256": hashlib.sha256(data).hexdigest()}
                  for rel, data in sorted(files.items())},
    }
    atomic_write_bytes(marker_path(kind, root), (json.dumps(marker, indent=1, sort_keys=True) + "\n").encode("utf-8"))
    return root
