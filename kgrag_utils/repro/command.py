"""`kgrag repro`: the command over a reproduction config (the CLI's parser calls `main(args)`).

    kgrag repro --list [--limit N]             # every table: rows, what it needs, estimated cost, command
    kgrag repro TABLE [--rows TEXT] [--limit N] [-p k=v] [--workers W] [--shard I/N] [--force]
    kgrag repro TABLE --table [--limit N]       # after the shards: the table from the records, nothing run
    kgrag repro TABLE --write | --check [--into FILE]   # the published table block, written or compared
    kgrag repro --book [--out DIR]              # the static site of the executed reproductions (make book)
"""

from __future__ import annotations

from typing import Any, Sequence

from ..errors import ConfigError

__all__ = ["main", "add_arguments"]


def add_arguments(parser) -> None:
    parser.add_argument("table", nargs="?", help="a reproduction config: configs/reproduce/TABLE.yaml")
    parser.add_argument("--list", action="store_true", help="print every table: rows, needs, estimated cost, command")
    parser.add_argument("--limit", type=int, default=0,
                        help="questions per run: the first N of each row's sample (its questions, fewer of them)")
    parser.add_argument("--rows", default="", metavar="TEXT",
                        help="only the rows whose label or run name holds TEXT (e.g. --rows 1-hop)")
    parser.add_argument("-p", "--param", action="append", default=[], metavar="NAME=VALUE",
                        help="set a parameter in every run whose notebook has it (another run name: NAME@k=v)")
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--shard", default=None, metavar="I/N", help="run shard I of N of the table's runs")
    parser.add_argument("--force", action="store_true",
                        help="re-run finished runs; a run name holding other parameters is replaced (kept aside)")
    parser.add_argument("--table", dest="table_only", action="store_true",
                        help="run nothing: the table from the records (after the shards)")
    parser.add_argument("--write", action="store_true", help="write the table into its published file's block")
    parser.add_argument("--check", action="store_true",
                        help="exit 1 when the published table block differs from the records")
    parser.add_argument("--into", default=None, help="the published file (default: the config's published_in)")
    parser.add_argument("--book", action="store_true", help="build the static site of the executed reproductions")
    parser.add_argument("--out", default=None, help="--book: the site's folder (default runs/book)")


def _overrides(spec, items: Sequence[str]) -> dict[str, Any]:
    from ..notebook_params import notebook_parameters, resolve_notebook
    from ..schema import cli_parameters

    if not items:
        return {}
    notebooks = [(resolve_notebook(r.notebook).name, notebook_parameters(resolve_notebook(r.notebook)))
                 for r in spec.runs]
    return cli_parameters(items, notebooks)


def main(args) -> int:
    from . import listing
    from .plan import plan
    from .spec import load_spec
    from .table import check, render, write

    if args.book:
        from .book import build_book

        print(f"book: {build_book(args.out) / 'index.html'}")
        return 0
    if args.list:
        print(listing.describe(args.table, args.limit) if args.table else listing.describe_all(args.limit))
        return 0
    if not args.table:
        raise ConfigError("say which table: `kgrag repro TABLE` (`kgrag repro --list` lists them).")
    if args.workers < 1:
        raise ConfigError(f"--workers must be at least 1 (got {args.workers}).")
    spec = load_spec(args.table)
    p = plan(spec, args.limit, _overrides(spec, args.param), args.rows)
    if args.check:
        diff = check(p, args.into)
        for line in diff:
            print(line)
        print(f"{spec.table}: the published table {'differs from' if diff else 'is'} what the run records give.")
        return 1 if diff else 0
    failed = 0
    if not (args.table_only or args.write):
        failed, sharded = _run(p, args)
        if sharded:  # one shard of several: the table waits for the others
            return 1 if failed else 0
    print(render(p))
    path = write(p, args.into, publish=args.write)
    print(f"table: {path}; executed notebooks and logs in {p.folder}")
    return 1 if failed else 0


def _run(p, args) -> tuple[int, bool]:
    """Run the plan: (runs that failed, whether this was one shard of several)."""
    from ..runner import parse_shard, summary_table
    from .plan import execute

    shard = parse_shard(args.shard) if args.shard else None
    outcomes = execute(p, workers=args.workers, force=args.force, shard=shard)
    print(summary_table(outcomes).to_string(index=False))
    failed = [o for o in outcomes if o.status not in ("ok", "skipped")]
    if shard is not None and shard[1] > 1:
        print(f"shard {shard[0]}/{shard[1]} done ({len(failed)} failed); once every shard is: "
              f"`{p.command()} --table`")
        return len(failed), True
    return len(failed), False
