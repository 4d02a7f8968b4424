"""What a reproduction costs here: LLM calls x the seconds per call measured on this machine.

Seconds per call of a preset (for one method where its records measured some: a KGP agent's call reads passages,
a SimGRAG pattern call demonstrations) come from what was measured with it: the LLM statistics that finished run records
(`results/<run>/run.json`, `tokens`: calls computed = cache misses, `generate_seconds`) and benchmark result files
(`benchmarks/results/*.json`, `llm.stats_this_session`) hold. Calls served from the response cache cost nothing
and are left out. The estimate is for a first run: a rerun whose calls are cached costs no LLM time.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Iterator, Mapping

from .. import settings

__all__ = ["Measured", "seconds_per_call", "method_of"]


@dataclass(frozen=True)
class Measured:
    preset: str
    calls: int  # computed calls (not cache hits) over the sources
    seconds: float
    sources: int  # files that measured them
    method: str = ""  # the method whose calls these are ("": every method's, and the result files')

    @property
    def per_call(self) -> float | None:
        return self.seconds / self.calls if self.calls else None


def _stats(blob: Mapping[str, Any]) -> tuple[int, float] | None:
    """(computed calls, their seconds) of an LLM statistics block, or None without both."""
    if not isinstance(blob, Mapping):
        return None
    seconds = blob.get("generate_seconds")
    calls = blob.get("cache_misses", blob.get("calls"))
    if not isinstance(seconds, (int, float)) or not isinstance(calls, int) or calls <= 0 or seconds <= 0:
        return None
    return calls, float(seconds)


def _read(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def _measurements(results: Path, benchmarks: Path) -> Iterator[tuple[str, str, int, float]]:
    """(preset, method or "", computed calls, seconds) of every run record and benchmark result file that measured some."""
    for path in sorted(results.glob("*/run.json")) if results.is_dir() else []:
        rec = _read(path)
        if isinstance(rec, dict) and rec.get("status") == "ok":
            got = _stats(rec.get("tokens") or {})
            preset = (rec.get("params") or {}).get("llm_preset")
            if got and preset:
                yield str(preset), str(rec.get("method") or ""), *got
    for path in sorted(benchmarks.glob("*.json")) if benchmarks.is_dir() else []:
        data = _read(path)
        llm = data.get("llm") if isinstance(data, dict) else None
        got = _stats(llm.get("stats_this_session") or {}) if isinstance(llm, dict) else None
        if got and llm.get("preset"):
            yield str(llm["preset"]), "", *got


@lru_cache(maxsize=4)
def _table(results: str, benchmarks: str) -> dict[str | tuple[str, str], Measured]:
    """By preset (every measurement of it) and by (preset, method) (its records of that method)."""
    out: dict[str | tuple[str, str], Measured] = {}
    for preset, method, calls, seconds in _measurements(Path(results), Path(benchmarks)):
        for key in ((preset, (preset, method)) if method else (preset,)):
            m = out.get(key, Measured(preset, 0, 0.0, 0, method if isinstance(key, tuple) else ""))
            out[key] = Measured(preset, m.calls + calls, m.seconds + seconds, m.sources + 1, m.method)
    return out


def seconds_per_call(preset: str, method: str = "") -> Measured:
    """The measured LLM seconds per computed call of `preset` on this machine: of `method`'s calls where its records
    measured some, else of all (calls 0: never measured here)."""
    table = _table(str(settings.results_dir(create=False)), str(settings.repo_root() / "benchmarks" / "results"))
    own = table.get((preset, method)) if method else None
    return own if own is not None else table.get(preset, Measured(preset, 0, 0.0, 0))


def method_of(notebook) -> str:
    """The name of the method whose notebook this is ("" for a notebook that is none): the key of its own seconds."""
    from ..methods.registry import method_for_notebook

    entry = method_for_notebook(notebook)
    return entry.name if entry is not None else ""
