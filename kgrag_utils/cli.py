"""`kgrag` command line: run notebooks and grids, manage data, list presets and paths.

    kgrag run 01_simgrag -p dataset=sample-movies-2hop -p limit=20
    kgrag grid demo [--workers 2] [--force] [--validate-only] [-p limit=2] [--shard 0/4]
    kgrag report demo                      # after the shards: the final notebook once, the whole summary
    kgrag data list | kgrag data fetch metaqa [--force] | kgrag data verify [NAME] [--accept] | kgrag data samples
    kgrag reproduce docs/records/RUN [--limit 10]   # re-run a record's first questions, compare one by one
    kgrag repro --list | kgrag repro headline [--limit 20] [--shard 0/2] [--workers 2]   # a table from its config
    kgrag tables [--check] [--show NAME]   # the docs' tables read from benchmarks/results/*.json, written or checked
    kgrag compare BEFORE_RESULTS AFTER_RESULTS --out FILE.json   # same records and scores, run by run?
    kgrag presets | kgrag paths | kgrag cache stats
    kgrag params [--check]                 # the notebooks' parameters cells: each config field's comment, from its config
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any, Sequence

from .errors import ConfigError, KgragError


def _notebook_params(notebook: str, items: Sequence[str]) -> dict[str, Any]:
    """`-p` values of `kgrag run`, each read against the notebook's declared type for it."""
    from .notebook_params import notebook_parameters, resolve_notebook
    from .schema import cli_parameters

    cli_parameters(items, [])  # name=value syntax first, before the notebook is looked up
    path = resolve_notebook(notebook)
    return cli_parameters(items, [(path.name, notebook_parameters(path))])


def _grid_params(config: str, items: Sequence[str]) -> dict[str, Any]:
    """`-p` values of `kgrag grid` / `kgrag report`, typed by the grid's notebooks' parameters."""
    from .runner.grid import grid_notebook_parameters
    from .schema import cli_parameters

    return cli_parameters(items, grid_notebook_parameters(config)) if items else {}


def _cmd_run(args) -> int:
    from .runner import run_notebook, summary_table

    if args.timeout < 1:
        raise ConfigError(f"--timeout is seconds per cell and must be at least 1 (got {args.timeout}).")

    outcome = run_notebook(args.notebook, _notebook_params(args.notebook, args.param), run_name=args.run_name,
                           timeout=args.timeout, force=args.force)
    print(summary_table([outcome]).to_string(index=False))
    print(f"executed notebook: {outcome.output}\nlog: {outcome.log}")
    return 0 if outcome.status in ("ok", "skipped") else 1


def _cmd_grid(args) -> int:
    from . import settings
    from .runner import load_grid, parse_shard, run_grid, summary_table

    if args.workers < 1:
        raise ConfigError(f"--workers must be at least 1 (got {args.workers}).")
    shard = parse_shard(args.shard) if args.shard else None
    outcomes = run_grid(args.config, workers=args.workers, force=args.force, validate_only=args.validate_only,
                        overrides=_grid_params(args.config, args.param), shard=shard)
    df = summary_table(outcomes)
    print(df.to_string(index=False))
    if args.validate_only:
        print(f"{len(outcomes)} runs validated (parameters accepted by their notebooks); nothing executed.")
        return 0
    if shard is not None and shard[1] > 1:
        print(f"shard {shard[0]}/{shard[1]} done; once every shard is: `kgrag report {args.config}`")
    failed = [o for o in outcomes if o.status not in ("ok", "skipped", "locked")]
    locked = [o for o in outcomes if o.status == "locked"]
    grid_dir = settings.runs_dir() / str(load_grid(args.config)["name"])
    print(f"\n{len(outcomes) - len(failed) - len(locked)} ok/skipped, {len(failed)} failed"
          + (f", {len(locked)} still written by another process (locked: rerun later to include them)" if locked else "")
          + f"; summary in {grid_dir / 'summary.md'} (and summary.csv), executed notebooks and logs in {grid_dir}")
    return 1 if failed else 0


def _cmd_report(args) -> int:
    from . import settings
    from .runner import load_grid, report_grid, summary_table

    outcomes = report_grid(args.config, overrides=_grid_params(args.config, args.param))
    print(summary_table(outcomes).to_string(index=False))
    bad = [o for o in outcomes if o.status not in ("ok", "skipped")]
    grid_dir = settings.runs_dir() / str(load_grid(args.config)["name"])
    print(f"\n{len(outcomes) - len(bad)} ok, {len(bad)} not ok; summary in {grid_dir / 'summary.md'} (and summary.csv)")
    return 1 if bad else 0


def _cmd_rescore(args) -> int:
    from . import settings
    from .rescore import rescore

    outcome = rescore(settings.results_dir(), write=not args.dry_run)
    for name, what in outcome.items():
        print(f"{name}: {what}")
    return 1 if any(w.startswith("differs") for w in outcome.values()) else 0


def _cmd_data(args) -> int:
    from .datasets import download

    if args.action == "list":
        rows = download.status()
        width = max(len(r["name"]) for r in rows) if rows else 10
        for r in rows:
            mark = "present" if r.get("present") else "missing"
            print(f"{r['name']:<{width}}  {mark:<8} {r.get('path', '')}  {r.get('how', '')}")
            if r.get("source_page"):
                print(f"{'':<{width}}  {'':<8} source: {r['source_page']}  license: {r.get('license') or 'see data/README.md'}")
        from .datasets.userdata import find_folders

        for folder in find_folders():  # dataset folders of your own: -p dataset=data/NAME (data/FORMATS.md)
            print(f"data/{folder.name}  folder   {folder}  -p dataset=data/{folder.name} (your own format)")
        return 0
    if args.action == "fetch":
        if not args.name:
            raise ConfigError("say which dataset to fetch: `kgrag data fetch NAME` (see `kgrag data list`).")
        for name in args.name:
            path = download.fetch_and_accept(name, force=args.force)  # only what it wrote becomes the reference
            print(f"{name}: ready at {path}")
        return 0
    if args.action == "verify":
        from .datasets.registry import get_spec
        from .datasets.verify import verify_dataset

        names = args.name or [r["name"] for r in download.status() if r["present"]]
        for name in names:
            files = verify_dataset(get_spec(name), accept_changes=args.accept)
            print(f"{name}: {len(files)} file(s) {'accepted as they are' if args.accept else 'verified'}")
        return 0
    if args.action == "samples":
        from .datasets.samples import ensure_sample

        for kind in ("movies", "kinship", "passages"):
            print(f"{kind}: {ensure_sample(kind, force=args.force)}")
        return 0
    raise ConfigError(f"unknown data action {args.action!r}")


def _cmd_reproduce(args) -> int:
    from . import settings
    from .record_rerun import is_run_record, reproduce_record
    from .reproduce import reproduce

    record = is_run_record(args.file) or is_run_record(settings.repo_root() / args.file)
    comparisons, kept = (reproduce_record if record else reproduce)(args.file, limit=args.limit)
    for c in comparisons:
        print(c.line())
    same = all(c.same == c.n for c in comparisons)
    print(f"{'reproduced' if same else 'NOT reproduced'}: the first {args.limit} question(s) of {args.file}"
          + (f"; re-run kept in: {kept}" if kept else " (its scratch folder is removed)"))
    return 0 if same else 1


def _cmd_repro(args) -> int:
    from .repro.command import main

    return main(args)


def _cmd_tables(args) -> int:
    from .repro.bench_tables import main

    return main(args)


def _cmd_compare(args) -> int:
    from .records import write_result
    from .results_diff import compare, unchanged

    out = compare(args.before, args.after, args.bench, args.note)
    write_result(args.out, out, {k: getattr(args, k) for k in ("before", "after", "bench", "note", "out")})
    print(json.dumps(out["verdict"], indent=1))
    return 0 if unchanged(out["verdict"]) else 1


def _cmd_presets(args) -> int:
    from .llm import list_presets

    for p in list_presets():
        print(p if isinstance(p, str) else json.dumps(p, default=str))
    return 0


def _cmd_params(args) -> int:
    from .methods import methods
    from .methods.knob_docs import sync_parameters_cell

    stale = [spec.notebook for spec in methods() if not sync_parameters_cell(spec.notebook, spec.config_class,
                                                                                write=not args.check)]
    for name in stale:
        print(f"{name}: {'out of date (run `kgrag params`)' if args.check else 'parameters cell rewritten'}")
    return 1 if stale and args.check else 0


def _cmd_paths(args) -> int:
    from .settings import describe

    for k, v in describe().items():
        print(f"{k:<8} {v}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="kgrag", description="KG-RAG notebooks: batch runner and data tools.")
    sub = ap.add_subparsers(dest="cmd", required=True)

    r = sub.add_parser("run", help="execute one notebook with parameters")
    r.add_argument("notebook")
    r.add_argument("-p", "--param", action="append", default=[], metavar="NAME=VALUE")
    r.add_argument("--run-name", default=None)
    r.add_argument("--timeout", type=int, default=3600, help="seconds per cell")
    r.add_argument("--force", action="store_true", help="re-run even if an identical run finished")
    r.set_defaults(func=_cmd_run)

    g = sub.add_parser("grid", help="execute a grid of runs from a YAML config (configs/NAME.yaml)")
    g.add_argument("config")
    g.add_argument("--workers", type=int, default=1)
    g.add_argument("--force", action="store_true")
    g.add_argument("--validate-only", action="store_true", help="check every run's parameters; execute nothing")
    g.add_argument("-p", "--param", action="append", default=[], metavar="NAME=VALUE",
                   help="set a parameter in every run whose notebook has it (e.g. -p llm_preset=fake -p limit=2)")
    g.add_argument("--shard", default=None, metavar="I/N",
                   help="run shard I of N (every N-th run from the I-th); the final notebook waits for `kgrag report`")
    g.set_defaults(func=_cmd_grid)

    rp = sub.add_parser("report", help="after a grid's shards: run its final notebook once and summarise every run")
    rp.add_argument("config")
    rp.add_argument("-p", "--param", action="append", default=[], metavar="NAME=VALUE",
                    help="the same -p values the shards were given")
    rp.set_defaults(func=_cmd_report)

    d = sub.add_parser("data", help="list, fetch or generate datasets")
    d.add_argument("action", choices=["list", "fetch", "verify", "samples"])
    d.add_argument("name", nargs="*")
    d.add_argument("--force", action="store_true", help="fetch: download again even files that are present")
    d.add_argument("--accept", action="store_true",
                   help="verify: take the files as they are now as their reference (after a change made on purpose)")
    d.set_defaults(func=_cmd_data)

    rr = sub.add_parser("reproduce", help="re-run a run record's (or a result file's) first questions and compare "
                                          "them one by one")
    rr.add_argument("file", help="a run record (docs/records/RUN/ or results/RUN/, or its run.json), or a result JSON "
                                 "with provenance and outcomes (benchmarks/results/...)")
    rr.add_argument("--limit", type=int, default=10, help="how many of its first questions to re-run")
    rr.set_defaults(func=_cmd_reproduce)

    from .repro.command import add_arguments

    rp2 = sub.add_parser("repro", help="reproduce a result table from its config (configs/reproduce/TABLE.yaml): "
                                      "its notebooks, its run records, its table")
    add_arguments(rp2)
    rp2.set_defaults(func=_cmd_repro)

    from .repro.bench_tables import add_arguments as table_arguments

    tb = sub.add_parser("tables", help="write the docs' tables that are read from the benchmarks' JSON "
                                      "(declared in configs/tables.py), or --check them")
    table_arguments(tb)
    tb.set_defaults(func=_cmd_tables)

    cp = sub.add_parser("compare", help="two results folders of the same runs: the records, summaries and score rows "
                                        "that differ, run by run (e.g. before and after a refactor)")
    cp.add_argument("before", help="results folder before the change")
    cp.add_argument("after", help="results folder after the change")
    cp.add_argument("--bench", nargs=2, metavar=("BEFORE_DIR", "AFTER_DIR"),
                    help="two folders of benchmark JSON files of the same commands")
    cp.add_argument("--note", default="", help="what was run, on which commits (recorded in the output)")
    cp.add_argument("--out", required=True, help="the JSON file to write (exit 1 when anything differs)")
    cp.set_defaults(func=_cmd_compare)

    rs = sub.add_parser("rescore", help="give finished runs recorded before release 0.2.0 their score rows "
                                       "(from their own records; the report reads them)")
    rs.add_argument("--dry-run", action="store_true", help="say what would change; write nothing")
    rs.set_defaults(func=_cmd_rescore)

    sub.add_parser("presets", help="list LLM presets").set_defaults(func=_cmd_presets)
    sub.add_parser("paths", help="show resolved folders").set_defaults(func=_cmd_paths)
    pm = sub.add_parser("params", help="write each config field's comment into its notebook's parameters cell")
    pm.add_argument("--check", action="store_true", help="only say which notebooks are out of date (exit 1 if any)")
    pm.set_defaults(func=_cmd_params)
    return ap


class Terminated(KeyboardInterrupt):
    """SIGTERM (`timeout`, SLURM's scancel, `docker stop`), handled as Ctrl-C is: record, summarise, one line."""


def _raise_terminated(signum, frame) -> None:  # noqa: ARG001 - a signal handler's signature
    _stop_kernels()  # first, so that no kernel is left to print its own interrupted traceback
    raise Terminated()


def _raise_interrupt(signum, frame) -> None:  # noqa: ARG001
    _stop_kernels()
    raise KeyboardInterrupt()


def _stop_kernels() -> None:
    from .runner.kernel import stop_kernels

    stop_kernels()


def _resume_line(argv: Sequence[str]) -> str:
    """'interrupted: rerun <the command> to resume' (the command quoted and cut to one short line)."""
    import shlex

    command = " ".join(shlex.quote(a) for a in ["kgrag", *argv])
    command = command if len(command) <= 160 else command[:157] + "..."
    return f"interrupted: rerun {command} to resume (what finished is kept and skipped)"


def main(argv: Sequence[str] | None = None) -> int:
    import signal
    import threading

    argv = list(sys.argv[1:] if argv is None else argv)
    args = build_parser().parse_args(argv)
    main_thread = threading.current_thread() is threading.main_thread()
    handlers = {signal.SIGTERM: _raise_terminated, signal.SIGINT: _raise_interrupt} if main_thread else {}
    previous = {sig: signal.signal(sig, handler) for sig, handler in handlers.items()}
    try:
        return int(args.func(args) or 0)
    except KgragError as exc:
        print(f"kgrag: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt as exc:  # Ctrl-C or SIGTERM: the run or grid recorded what ran; one line, no traceback
        print(f"kgrag: {_resume_line(argv)}", file=sys.stderr, flush=True)
        return 143 if isinstance(exc, Terminated) else 130
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
