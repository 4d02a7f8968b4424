"""How interactive the run explorer stays on a 1,000-question run (kgrag_utils.explore).

    python benchmarks/explore_speed.py --source results --n 1000 --out benchmarks/results/explore_speed.json

For every method run found under `--source` (a results folder; by default the demo grid run with the fake
LLM into a temporary folder: `kgrag grid demo -p llm_preset=fake`), the script writes a run of `--n`
examples made of that run's own records (cycled, with new ids, so the record sizes are real), and times:
  * opening the run (one pass over examples.jsonl: line offsets and outlines);
  * filtering (by status, by failing stage, by free text);
  * reading one record at a random position (cold: not in the view's small cache);
  * one step of the live explorer without a browser (record read, panels, plotly FigureWidgets: the
    Python side of a click), over `--steps` steps;
  * comparing two such runs (in the second, every third example holds another source record).
Each step's target is half a second; the JSON says which were met and under which machine load.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from kgrag_utils import records  # noqa: E402
from kgrag_utils.explore import compare_runs, list_runs, open_run  # noqa: E402

TARGET_S = 0.5


def demo_results(tmp: Path) -> Path:
    """Run the demo grid with the fake LLM into tmp (about 3 minutes on 2 cores) and return its results folder."""
    os.environ.update(KGRAG_RESULTS_DIR=str(tmp / "results"), KGRAG_RUNS_DIR=str(tmp / "runs"),
                      KGRAG_FIGURES_DIR=str(tmp / "figures"))
    os.environ.setdefault("KGRAG_CACHE_DIR", str(tmp / "cache"))
    from kgrag_utils import runner

    runner.run_grid("demo", overrides={"llm_preset": "fake"}, progress=False)
    return tmp / "results"


def write_big_run(dest: Path, name: str, method: str, rows: list[dict], n: int, swap_every: int = 0) -> Path:
    """n examples cycling through `rows` with new ids; with `swap_every`, every k-th example holds the record of
    the next source row under its own id (another outcome, another pattern: what a second run changes)."""
    rec = records.RunRecorder(method, {"dataset": f"bench-{name}", "n": n}, run_name=name, root=dest)
    for i in range(n):
        src = rows[(i + 1) % len(rows)] if swap_every and i % swap_every == 0 else rows[i % len(rows)]
        rec.add(dict(src, id=f"{rows[i % len(rows)].get('id')}-r{i}"))
    rec.finish(summary={"n": n})
    return dest / name


def warm_up() -> None:
    """Import the widget stack and build one FigureWidget (plotly makes its validators on first use): a kernel
    pays this once, on the first explorer it shows; it is reported apart from the steps."""
    import plotly.graph_objects as go

    from kgrag_utils.explore.widget import Explorer  # noqa: F401  (ipywidgets, anywidget)

    go.FigureWidget(data=[go.Scatter(x=[0], y=[0])])


def timed(fn, *args, **kw):
    t0 = time.perf_counter()
    out = fn(*args, **kw)
    return out, time.perf_counter() - t0


def stats(values: list[float]) -> dict:
    ordered = sorted(values)
    return {"mean_s": round(statistics.mean(values), 4), "p50_s": round(statistics.median(values), 4),
            "p90_s": round(ordered[int(0.9 * (len(ordered) - 1))], 4), "max_s": round(max(values), 4),
            "under_target": sum(v < TARGET_S for v in values), "n": len(values)}


def measure(dest: Path, name: str, method: str, rows: list[dict], n: int, steps: int) -> dict:
    path = write_big_run(dest, name, method, rows, n)
    other = write_big_run(dest, f"{name}-b", method, rows, n, swap_every=3)
    view, t_open = timed(open_run, path)
    stage = next(iter(view.stages()), "any")
    filters = {"status": timed(view.filter, status="wrong")[1], "stage": timed(view.filter, stage=stage)[1],
               "text": timed(view.filter, text="r99")[1]}
    rng = random.Random(0)
    reads = []
    for pos in rng.sample(range(len(view)), min(50, len(view))):
        view._cache.clear()
        reads.append(timed(view.record, pos)[1])
    from kgrag_utils.explore.widget import Explorer

    ex, t_first = timed(Explorer, str(path.name), root=dest)  # opens the run and shows its first example
    step_times = [timed(ex.step, +1)[1] for _ in range(steps)]
    table, t_compare = timed(compare_runs, open_run(other), view)
    worst = max([t_open, *filters.values(), max(reads), statistics.median(step_times)])
    return {"method": method, "n": len(view), "file_mb": round(path.joinpath(records.EXAMPLES_FILE).stat().st_size / 2**20, 2),
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
    load0 = os.getloadavg()
    _, t_import = timed(warm_up)
    with tempfile.TemporaryDirectory(prefix="kgrag-explore-bench-") as tmp:
        source = Path(args.source) if args.source else demo_results(Path(tmp))
        dest = Path(tmp) / "big"
        out = []
        for run in list_runs(source).to_dict("records"):
            if run["method"] in {r["method"] for r in out}:
                continue  # one run per method
            rows, _ = records.read_examples(source / run["run_name"] / records.EXAMPLES_FILE)
            out.append(measure(dest, f"big-{run['method']}", run["method"], rows, args.n, args.steps))
            print(json.dumps(out[-1]))
    result = {"benchmark": "explore_speed", "target_s": TARGET_S, "n_examples": args.n,
              "widget_stack_first_use_s": round(t_import, 3), "runs": out,
              "machine": {"platform": platform.platform(), "cpu_count": os.cpu_count(),
                          "loadavg_start": [round(x, 2) for x in load0],
                          "loadavg_end": [round(x, 2) for x in os.getloadavg()]},
              "source": args.source or "kgrag grid demo -p llm_preset=fake (temporary)",
              "note": "widget_step is the Python side of one click in the live explorer (record read, panels, plotly "
                      "FigureWidgets), without a browser; explorer_first_example_s opens the run in the widget."}
    records.write_result(args.out, result)
    print("wrote", args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
