"""Per-question JSON lines shared by the peer harnesses and their workers (standard library only).

A worker runs in a peer's own environment, which lacks the project's package, so this file imports
nothing but the standard library. Every finished question is one appended, flushed line; a killed
run keeps them, and a rerun skips their ids. A line torn by a crash is skipped.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Iterable, Iterator


def read_jsonl(path: str | os.PathLike) -> list[dict]:
    path = Path(path)
    if not path.exists():
        return []
    out = []
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            out.append(json.loads(line))
        except json.JSONDecodeError:  # the torn last line of a killed run
            continue
    return out


def append_jsonl(path: str | os.PathLike, row: dict) -> None:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a", encoding="utf-8") as f:
        if f.tell() and not path.read_bytes().endswith(b"\n"):  # after a torn line: start afresh
            f.write("\n")
        f.write(json.dumps(row, ensure_ascii=False, default=str) + "\n")
        f.flush()
        os.fsync(f.fileno())


def pending(items: Iterable[dict], path: str | os.PathLike, key: str = "id") -> Iterator[dict]:
    """Items whose id has no line in `path` yet."""
    done = {r.get(key) for r in read_jsonl(path)}
    return (it for it in items if it[key] not in done)
