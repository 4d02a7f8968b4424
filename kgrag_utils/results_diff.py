"""Same records and scores? Two results folders (and optionally two folders of benchmark JSON) compared:
`kgrag compare BEFORE_RESULTS AFTER_RESULTS [--bench BEFORE_DIR AFTER_DIR] --out FILE.json`.

A refactor that should change nothing is checked by running the same grid (or benchmark) before and after
it and comparing, run by run (paired by the run name without its key: `01_simgrag-...`):

* every example record, by id: values equal, volatile fields apart (timings, seconds, cache flags, dates);
  keys only one side has are listed (a new record field is a change worth seeing, not a failure);
* every summary key both sides have;
* the score rows: AFTER's stored rows against BEFORE's. A BEFORE run recorded before summaries stored
  rows (release 0.2.0) gets them from its own records with the current code (`rescore.rescore_run`,
  nothing written), and says whether those records give back every value its summary stored.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

from .records import EXAMPLES_FILE, read_examples, read_run

__all__ = ["compare", "unchanged", "compare_results", "compare_benchmarks", "compare_rows", "same"]

#: path parts that hold what a rerun may change without changing a result
VOLATILE = ("second", "timing", "latency", "cached", "wall", "updated", "started", "when", "environment", "provenance",
            "machine", "created", "command", "argv", "ms_per", "runner", "log", "entity_notes", "_s")


def volatile(path: list) -> bool:
    parts = [str(p).lower() for p in path]
    return (any(v in p for p in parts for v in VOLATILE if v != "_s") or any(p.endswith("_s") for p in parts)
            or parts[-1:] == ["out"])  # where a benchmark was told to write


def walk(a, b, path: list, out: dict) -> None:
    if isinstance(a, dict) and isinstance(b, dict):
        for k in a:
            walk(a[k], b[k], path + [k], out) if k in b else out["only_before"].add(str(k))
        out["only_after"].update(str(k) for k in b if k not in a)
    elif isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for i, (x, y) in enumerate(zip(a, b)):
            walk(x, y, path + [i], out)
    elif not same(a, b):
        (out["volatile"] if volatile(path) else out["differ"]).append(["/".join(map(str, path)), a, b])


def same(a, b) -> bool:
    if isinstance(a, (int, float)) and isinstance(b, (int, float)) and not isinstance(a, bool):
        return math.isclose(float(a), float(b), rel_tol=1e-9, abs_tol=1e-12) or (a != a and b != b)
    return a == b


def _new() -> dict:
    return {"differ": [], "volatile": [], "only_before": set(), "only_after": set()}


def _done(out: dict, keep: int = 10) -> dict:
    return {"n_differ": len(out["differ"]), "differ": out["differ"][:keep], "n_volatile": len(out["volatile"]),
            "keys_only_before": sorted(out["only_before"]), "keys_only_after": sorted(out["only_after"])}


def _runs(root: Path) -> dict[str, Path]:
    return {p.name.rsplit("-", 1)[0]: p for p in sorted(root.iterdir()) if (p / "run.json").exists()}


def _rows_of(run_dir: Path) -> tuple[list[dict], str]:
    """A run's score rows and where they came from ("stored", "from its records", or why there are none)."""
    from .methods.registry import entries
    from .rescore import rescore_run

    rec = read_run(run_dir)
    summary = rec.get("summary") or {}
    if summary.get("rows"):
        return summary["rows"], "stored"
    verdict = rescore_run(run_dir, write=False)
    if verdict != "rescored":
        return [], verdict
    examples = read_examples(run_dir / EXAMPLES_FILE)[0]
    return entries()[rec["method"]].summarize(examples)["rows"], "from its records (they give back every stored value)"


def compare_rows(before: list[dict], after: list[dict]) -> dict:
    key = lambda r: (r["variant"], r["metric"])  # noqa: E731
    b, a = {key(r): r for r in before}, {key(r): r for r in after}
    cols = ("n", "value", "definition", "prompt_tokens_per_q", "uses_llm")
    bad = [{"row": list(k), "before": {c: b[k].get(c) for c in cols}, "after": {c: a[k].get(c) for c in cols}}
           for k in b if k in a and not all(same(b[k].get(c), a[k].get(c)) for c in cols)]
    return {"n_before": len(b), "n_after": len(a), "only_before": [list(k) for k in b if k not in a],
            "only_after": [list(k) for k in a if k not in b], "differ": bad,
            "same": not bad and b.keys() == a.keys()}


def compare_results(before: Path, after: Path) -> dict:
    """Each run of `before` against the run of `after` with its name (without the run key)."""
    out = {}
    rb, ra = _runs(before), _runs(after)
    for name, db in rb.items():
        da = ra.get(name)
        if da is None:
            out[name] = {"error": "no such run after"}
            continue
        eb, ea = (read_examples(d / EXAMPLES_FILE)[0] if (d / EXAMPLES_FILE).exists() else [] for d in (db, da))
        ex = _new()
        ids_b, ids_a = [e.get("id") for e in eb], [e.get("id") for e in ea]
        for x, y in zip(eb, ea):
            walk(x, y, [x.get("id")], ex)
        sm = _new()
        walk(read_run(db).get("summary") or {}, read_run(da).get("summary") or {}, [], sm)
        rows_b, source = _rows_of(db)
        rows_a, _ = _rows_of(da)
        out[name] = {"runs": [db.name, da.name], "examples": {"n": [len(eb), len(ea)], "same_ids": ids_b == ids_a, **_done(ex)},
                     "summary": _done(sm), "rows": {"before_rows": source, **compare_rows(rows_b, rows_a)}}
    return out


def compare_benchmarks(before: Path, after: Path) -> dict:
    out = {}
    for f in sorted(before.glob("*.json")):
        g = after / f.name
        if not g.exists():
            out[f.name] = {"error": "no such file after"}
            continue
        d = _new()
        walk(json.loads(f.read_text(encoding="utf-8")), json.loads(g.read_text(encoding="utf-8")), [], d)
        out[f.name] = _done(d)
    return out


def compare(before: Path, after: Path, bench: tuple[Path, Path] | None = None, note: str = "") -> dict:
    """The comparison `kgrag compare` writes: each run's, each benchmark file's (with `bench`), and the verdict."""
    out = {"benchmark": "compare_runs", "note": note, "runs": compare_results(Path(before), Path(after))}
    if bench:
        out["benchmark_files"] = compare_benchmarks(*map(Path, bench))
    runs = [r for r in out["runs"].values() if "error" not in r]
    out["verdict"] = {
        "runs": len(out["runs"]), "runs_missing_after": len(out["runs"]) - len(runs),
        "example_values_differ": sum(r["examples"]["n_differ"] for r in runs),
        "summary_values_differ": sum(r["summary"]["n_differ"] for r in runs),
        "summary_keys_lost": sorted({k for r in runs for k in r["summary"]["keys_only_before"]}),
        "score_rows_compared": sum(r["rows"]["n_before"] for r in runs),
        "score_rows_same": all(r["rows"]["same"] for r in runs),
        "benchmark_values_differ": {k: v.get("n_differ") for k, v in out.get("benchmark_files", {}).items()},
    }
    return out


def unchanged(verdict: dict) -> bool:
    """Nothing missing, no value differs, the same score rows (volatile fields and new keys apart)."""
    return (not verdict["runs_missing_after"] and not verdict["example_values_differ"]
            and not verdict["summary_values_differ"] and verdict["score_rows_same"]
            and all(n == 0 for n in verdict["benchmark_values_differ"].values()))  # None: no such file after
