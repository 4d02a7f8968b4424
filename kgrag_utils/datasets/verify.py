"""A real dataset's files against what they are known to be: the download step's pins (size, sha256,
line count; `sources`) or, for a file without a pin, what it was when first verified here
(`kgrag_utils.integrity`, which holds the file primitives). Called on every load of a real dataset
(`registry.load_dataset`, `registry.require_present`) and by `kgrag data verify`; cheap after the first
time (a stat per file).

It takes the dataset's registry entry (`registry.get_spec(name)`), so that it needs nothing above it.
"""

from __future__ import annotations

from pathlib import Path

from .. import settings
from ..errors import IntegrityError
from ..integrity import Pin, accept, pin_problem, verify_file
from .sources import folder_pins, group_for_folder

__all__ = ["dataset_files", "verify_dataset"]


def real_root(spec) -> Path:
    """The folder of a real dataset under the data folder (`KGRAG_DATA_DIR`)."""
    return settings.data_dir() / spec.folder


def dataset_files(spec) -> list[tuple[Path, Pin | None]]:
    """The files of a real dataset that a load reads and that can be checked: its required files, and
    every file of its folder that has a pin."""
    if spec.source != "real" or not spec.folder:
        return []
    root = real_root(spec)
    pins = folder_pins(spec.folder)
    paths: dict[Path, Pin | None] = {}
    for alternatives in spec.required:
        for pattern in alternatives:
            for p in sorted(root.glob(pattern)):
                if p.is_file():
                    paths[p] = pins.get(p.relative_to(root).as_posix())
    for rel, pin in pins.items():
        if (root / rel).is_file():
            paths[root / rel] = pin
    return sorted(paths.items())


def verify_dataset(spec, accept_changes: "bool | set[Path]" = False) -> list[Path]:
    """Check a real dataset's files (one-line IntegrityError naming the file and the refetch); the files checked.

    `accept_changes`: True takes the files as they are now as the reference (a change made on purpose);
    a set of paths (what a fetch just wrote) takes only those of them that have no pin, or match it.
    """
    files = dataset_files(spec)
    if not files:
        return []
    fix = f"refetch it with `kgrag data fetch {group_for_folder(spec.folder) or spec.name} --force`"
    hint = f"`kgrag data verify {spec.name} --accept`"
    for path, pin in files:
        if accept_changes is True:
            accept(path)
        elif accept_changes and path.resolve() in accept_changes:
            problem = pin_problem(path, pin, fix, hint)
            if problem:
                raise IntegrityError(problem)
            accept(path)
        verify_file(path, pin, fix, hint)
    return [p for p, _ in files]
