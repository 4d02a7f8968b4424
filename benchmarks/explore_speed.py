"""How interactive the run explorer (kgrag_utils.explore) stays on 1,000-example runs, against half a second.

    python benchmarks/explore_speed.py --source results --n 1000 --out benchmarks/results/explore_speed.json

For one run per method under `--source` (default: the demo grid with the fake LLM, in a temporary folder), a run of
`--n` examples is written from that run's own records (cycled, new ids, so record sizes are real) and timed: opening,
filtering (status, failing stage, text), one cold record read, `--steps` steps of the live explorer without a
browser (the Python side of a click), and comparing it with a second such run (every third example changed).
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import tempfile
from pathlib import Path

from bench_common import load, machine, timed, write

from kgrag_utils import records
from kgrag_utils.explore import compare_runs, list_runs, open_run

TARGET_S = 0.5


def demo_results(tmp: Path) -> Path:
    """The demo grid run with the fake LLM into tmp (about 3 minutes on 2 cores): its results folder."""
    os.environ.update(KGRAG_RESULTS_DIR=str(tmp / "results"), KGRAG_RUNS_DIR=str(tmp / "runs"),
                      KGRAG_FIGURES_DIR=str(tmp / "figures"))
    os.environ.setdefault("KGRAG_CACHE_DIR", str(tmp / "cache"))
    from kgrag_utils import runner

    runner.run_grid("demo", overrides={"llm_preset": "fake"}, progress=False)
    return tmp / "results"


def write_big_run(dest: Path, name: str, method: str, rows: list[dict], n: int, swap_every: int = 0) -> Path:
    """n examples cycling through `rows` with new ids; with `swap_every`, every k-th holds the next row's record."""
    rec = records.RunRecorder(method, {"dataset": f"bench-{name}", "n": n}, run_name=name, root=dest)
    for i in range(n):
        src = rows[(i + 1) % len(rows)] if swap_every and i % swap_every == 0 else rows[i % len(rows)]
        rec.add(dict(src, id=f"{rows[i % len(rows)].get('id')}-r{i}"))
    rec.finish(summary={"n": n})
    return dest / name


def warm_up() -> None:
    """The widget stack's first use (imports, plotly's validators): paid once per kernel, reported apart."""
    import plotly.graph_objects as go

    from kgrag_utils.explore.widget import Explorer  # noqa: F401  (ipywidgets, anywidget)

    go.FigureWidget(data=[go.Scatter(x=[0], y=[0])])


def stats(values: list[float]) -> dict:
    ordered = sorted(values)
    return {"mean_s": round(statistics.mean(values), 4), "p50_s": round(statistics.median(values), 4),
            "p90_s": round(ordered[int(0.9 * (len(ordered) - 1))], 4), "max_s": round(max(values), 4),
            "under_target": sum(v < TARGET_S for v in values), "n": len(values)}


def measure(dest: Path, name: str, method: str, rows: list[dict], n: int, steps: int) -> dict:
    from kgrag_utils.explore.widget import Explorer

    path = write_big_run(dest, name, method, rows, n)
    other = write_big_run(dest, f"{name}-b", method, rows, n, swap_every=3)
    view, t_open = timed(open_run, path)
    stage = next(iter(view.stages()), "any")
    filters = {"status": timed(view.filter, status="wrong")[1], "stage": timed(view.filter, stage=stage)[1],
               "text": timed(view.filter, text="r99")[1]}
    reads = []
    for pos in random.Random(0).sample(range(len(view)), min(50, len(view))):
        view._cache.clear()
        reads.append(timed(view.record, pos)[1])
    ex, t_first = timed(Explorer, str(path.name), root=dest)  # opens the run and shows its first example
    step_times = [timed(ex.step, +1)[1] for _ in range(steps)]
    table, t_compare = timed(compare_runs, open_run(other), view)
    worst = max([t_open, *filters.values(), max(reads), statistics.median(step_times)])
    return {"method": method, "n": len(view), "file_mb": round((path / records.EXAMPLES_FILE).stat().st_size / 2**20, 2),
            "open_s": round(t_open, 4), "filter_s": {k: round(v, 4) for k, v in filters.items()},
            "record_read": stats(reads), "explorer_first_example_s": round(t_first, 4), "widget_step": stats(step_times),
            "compare_s": round(t_compare, 4), "compare_changed": int(len(table)),
            "open_filter_read_and_median_step_under_target": bool(worst < TARGET_S),
            "compare_under_target": bool(t_compare < TARGET_S)}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--source", default="", help="a results folder holding method runs ('': run the fake demo grid)")
    ap.add_argument("--n", type=int, default=1000)
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--out", default="benchmarks/results/explore_speed.json")
    args = ap.parse_args(argv)
    load0 = load()
    _, t_import = timed(warm_up)
    with tempfile.TemporaryDirectory(prefix="kgrag-explore-bench-") as tmp:
        source = Path(args.source) if args.source else demo_results(Path(tmp))
        out = []
        for run in list_runs(source).to_dict("records"):
            if run["method"] not in {r["method"] for r in out}:  # one run per method
                rows, _ = records.read_examples(source / run["run_name"] / records.EXAMPLES_FILE)
                out.append(measure(Path(tmp) / "big", f"big-{run['method']}", run["method"], rows, args.n, args.steps))
                print(out[-1], flush=True)
    write(args.out, {"benchmark": "explore_speed", "target_s": TARGET_S, "n_examples": args.n,
                     "widget_stack_first_use_s": round(t_import, 3), "runs": out,
                     "machine": machine(loadavg_start=load0, loadavg_end=load()),
                     "source": args.source or "kgrag grid demo -p llm_preset=fake (temporary)"})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
