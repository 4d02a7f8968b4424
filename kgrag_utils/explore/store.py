"""Lazy reading of one run: line offsets of `examples.jsonl` indexed once, one record read on demand.

A 1,000-question run stays interactive because nothing holds every record: opening a run scans the file
once (each line parsed with `records.parse_example_line`, the same rule as `records.read_examples`: a
torn line is skipped and counted, the last line of an id wins) and keeps, per example, its byte offset
and a one-line outline (id, question, status, failing stage, correct, score; `outcome.outline`).
Filtering works on that outline (a DataFrame); stepping reads one line with `seek`. A run still being
written is followed: `refresh()` indexes only the bytes appended since the last scan.
"""

from __future__ import annotations

from collections import OrderedDict
from pathlib import Path
from typing import Any, Iterable

from .. import records, settings
from ..errors import ConfigError, did_you_mean
from . import outcome

__all__ = ["RunView", "open_run", "list_runs", "resolve_run_dir", "FILTER_STATUSES"]

#: the status filter's choices ("any" keeps every example)
FILTER_STATUSES = ("any", *outcome.STATUSES)
_CACHE_SIZE = 32  # records kept parsed (stepping back and forth re-reads nothing)


def resolve_run_dir(run: str | Path, root: Path | str | None = None) -> Path:
    """A run name under the results folder, or a run folder's path; a bad name is refused naming the runs."""
    path = Path(run)
    if path.is_dir() and (path / records.RUN_FILE).exists():
        return path
    base = Path(root) if root else settings.results_dir(create=False)
    cand = base / str(run)
    if (cand / records.RUN_FILE).exists():
        return cand
    names = sorted(p.parent.name for p in base.glob(f"*/{records.RUN_FILE}")) if base.is_dir() else []
    tip = did_you_mean(str(run), names)
    hint = f" ({tip})" if tip else ""
    raise ConfigError(f"no run {str(run)!r} under {base}{hint}: pick one of `kgrag_utils.explore.list_runs()` "
                      f"({len(names)} runs), or run a notebook first.")


def list_runs(root: Path | str | None = None, methods: Iterable[str] | None = None):
    """The runs under the results folder that hold examples, newest first (a DataFrame from `records.load_runs`)."""
    import pandas as pd

    runs = records.load_runs(root)
    if runs.empty:
        return pd.DataFrame(columns=["run_name", "method", "status", "n_examples", "updated"])
    base = Path(root) if root else settings.results_dir(create=False)
    # examples on disk, whatever run.json counted (a run still being written states 0 until it finishes)
    keep = runs["run_name"].map(lambda n: _size(base / str(n) / records.EXAMPLES_FILE) > 0)
    if methods is not None:
        keep &= runs["method"].isin(list(methods))
    runs = runs[keep]
    stamp = [_mtime(base / str(n) / records.RUN_FILE) for n in runs["run_name"]]  # finer than `updated` (seconds)
    order = runs["updated"].fillna("") if "updated" in runs else runs["run_name"]
    return runs.assign(_order=order, _stamp=stamp).sort_values(["_order", "_stamp", "run_name"], ascending=False) \
        .drop(columns=["_order", "_stamp"]).reset_index(drop=True)


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def _mtime(path: Path) -> int:
    try:
        return path.stat().st_mtime_ns
    except OSError:
        return 0


def open_run(run: str | Path, root: Path | str | None = None) -> "RunView":
    """The lazy view of one run (a name under the results folder or a run folder's path)."""
    return RunView(resolve_run_dir(run, root))


class RunView:
    """One run's records, read lazily: `outline` for filtering, `record(i)` / `by_id(id)` for one example."""

    def __init__(self, run_dir: Path | str):
        self.run_dir = Path(run_dir)
        self.run = records.read_run(self.run_dir)
        self.name = str(self.run.get("run_name") or self.run_dir.name)
        self.method = str(self.run.get("method") or "?")
        self.path = self.run_dir / records.EXAMPLES_FILE
        self._offsets: list[tuple[int, int]] = []   # (offset, length) per example, in first-seen order
        self._rows: list[dict] = []                 # the outline row per example
        self._where: dict[Any, int] = {}            # id -> position
        self._scanned = 0                           # bytes indexed so far
        self.torn_lines = 0
        self._cache: OrderedDict[int, dict] = OrderedDict()
        self._frame = None
        self.refresh()

    # ------------------------------------------------------------------ indexing
    def refresh(self) -> int:
        """Index the lines appended since the last scan (a run still being written); returns how many."""
        if not self.path.exists():
            return 0
        size = self.path.stat().st_size
        if size < self._scanned:  # the file was started over (a new run key): index it afresh
            self.__init__(self.run_dir)
            return len(self._rows)
        added = 0
        with open(self.path, "rb") as fh:
            fh.seek(self._scanned)
            pos = self._scanned
            for line in fh:
                if not line.endswith(b"\n"):
                    break  # a line being written: indexed on the next refresh
                start, pos = pos, pos + len(line)
                if line.strip():
                    added += self._index_line(line, start)
            self._scanned = pos
        if added:
            self._frame = None
        return added

    def _index_line(self, line: bytes, offset: int) -> int:
        ex = records.parse_example_line(line)
        if ex is None:
            self.torn_lines += 1
            return 0
        row = outcome.outline(self.method, ex)
        key = ex.get("id")
        at = self._where.get(key) if key is not None else None
        if at is None:
            at = len(self._rows)
            self._rows.append(row)
            self._offsets.append((offset, len(line)))
            if key is not None:
                self._where[key] = at
        else:  # the same example recorded again: the last line counts
            self._rows[at] = row
            self._offsets[at] = (offset, len(line))
        row["position"] = at
        self._cache.pop(at, None)
        return 1

    # ------------------------------------------------------------------ reading
    def __len__(self) -> int:
        return len(self._rows)

    @property
    def ids(self) -> list:
        return [r["id"] for r in self._rows]

    @property
    def outline(self):
        """One row per example: position, id, question, status, stage, correct, score (a DataFrame)."""
        import pandas as pd

        if self._frame is None:
            self._frame = pd.DataFrame(self._rows, columns=outcome.OUTLINE_COLUMNS)
        return self._frame

    def record(self, position: int) -> dict:
        """The full record at a position of the outline (one `seek` and one line parsed)."""
        if not 0 <= position < len(self._rows):
            raise ConfigError(f"example {position} is out of range: {self.name} has {len(self._rows)} examples.")
        hit = self._cache.get(position)
        if hit is not None:
            self._cache.move_to_end(position)
            return hit
        offset, length = self._offsets[position]
        with open(self.path, "rb") as fh:
            fh.seek(offset)
            ex = records.parse_example_line(fh.read(length))
        if ex is None:  # the file changed under us (rewritten): index again
            raise ConfigError(f"{self.path} changed while it was read: call refresh() or open the run again.")
        self._cache[position] = ex
        if len(self._cache) > _CACHE_SIZE:
            self._cache.popitem(last=False)
        return ex

    def by_id(self, example_id: Any) -> dict:
        """The record of one example id."""
        if example_id not in self._where:
            raise ConfigError(f"{self.name} has no example {example_id!r} ({len(self)} examples).")
        return self.record(self._where[example_id])

    def position_of(self, example_id: Any) -> int | None:
        return self._where.get(example_id)

    # ------------------------------------------------------------------ filtering
    def filter(self, status: str = "any", stage: str = "any", correct: str = "any", text: str = ""):
        """The outline rows that match: status (ok / wrong / failed / error), failing stage, correctness
        ("yes" / "no"), and a free text found in the id, question or prediction (case-insensitive)."""
        frame = self.outline
        keep = frame.index == frame.index
        if status not in ("any", "", None):
            if status not in outcome.STATUSES:
                raise ConfigError(f"status {status!r} is not one of {', '.join(FILTER_STATUSES)}.")
            keep &= frame["status"] == status
        if stage not in ("any", "", None):
            keep &= frame["stage"] == stage
        if correct not in ("any", "", None):
            if correct not in ("yes", "no"):
                raise ConfigError(f"correct must be 'any', 'yes' or 'no', got {correct!r}.")
            keep &= frame["correct"] == (correct == "yes")
        if text:
            needle = str(text).casefold()
            hay = frame["id"].astype(str) + "\n" + frame["question"].astype(str) + "\n" + frame["prediction"].astype(str)
            keep &= hay.str.casefold().str.contains(needle, regex=False)
        return frame[keep]

    def stages(self) -> list[str]:
        """The failing stages present in this run (for the stage filter)."""
        return sorted({s for s in self.outline["stage"] if s})

    def describe(self) -> dict:
        """Run name, method, dataset, LLM, status and the outline's counts."""
        params = self.run.get("params") or {}
        llm = self.run.get("llm") if isinstance(self.run.get("llm"), dict) else {}
        counts = self.outline["status"].value_counts().to_dict() if len(self) else {}
        return {"run": self.name, "method": self.method, "dataset": params.get("dataset"),
                "llm": (llm or {}).get("preset") or params.get("llm_preset"), "status": self.run.get("status"),
                "n": len(self), "torn_lines": self.torn_lines, **{s: int(counts.get(s, 0)) for s in outcome.STATUSES}}

    def __repr__(self) -> str:
        return f"RunView({self.name!r}, method={self.method!r}, n={len(self)})"
