"""Per-question JSON lines shared by the peer harnesses and their workers (standard library only).

A worker runs in a peer's own environment, which lacks the project's package. Every finished question is
one appended, flushed line; a killed run keeps them, a rerun skips their ids, a line torn by a crash is skipped.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Callable, Iterable


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


def run_pending(items: Iterable[dict], path: str | os.PathLike, one: Callable[[dict], dict], max_new: int = 0,
                label: str = "") -> int:
    """Append `one(item)` to `path` for each item whose id has no line there yet, at most `max_new` (0: all)."""
    done = {r.get("id") for r in read_jsonl(path)}
    todo = [it for it in items if it["id"] not in done][: max_new or None]
    for i, item in enumerate(todo, 1):
        append_jsonl(path, one(item))
        print(f"{label}{i}/{len(todo)} {item['id']}", flush=True)
    return len(todo)
