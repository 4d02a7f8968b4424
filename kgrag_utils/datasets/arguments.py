"""Dataset arguments for the benchmark scripts: any registered dataset, with its options.

    ap = argparse.ArgumentParser()
    add_dataset_arguments(ap, kinds=("kgqa",), default="metaqa-1hop")
    args = ap.parse_args()
    ds = dataset_from_args(args, limit=args.limit, seed=args.seed)

gives every script `--dataset NAME --split SPLIT --option key=value ...`, e.g.
`--dataset pq-file --option path=data/PQL-2H.txt --option kb=data/PQL2-KB.txt`,
`--dataset metaqa-1hop --option variant=ntm`, `--dataset clutrr --option chain_lengths=[4,5]`.
Option values are read as JSON where they parse (numbers, true/false, null, lists), else as text.
An unknown dataset, a dataset of the wrong kind or an option the dataset does not take is refused
in one line before anything is loaded.
"""

from __future__ import annotations

import argparse
import json
from typing import Sequence

from ..errors import ConfigError
from .registry import dataset_names, get_spec, load_dataset

__all__ = ["parse_option_value", "parse_options", "add_dataset_arguments", "check_dataset_arguments",
           "dataset_from_args"]


def parse_option_value(text: str):
    """`4` -> 4, `0.5` -> 0.5, `true` -> True, `[4,5]` -> [4, 5], `null` -> None, anything else: the text."""
    try:
        return json.loads(text)
    except (ValueError, TypeError):
        return text


def parse_options(pairs: Sequence[str] | None) -> dict:
    """`["path=a.txt", "variant=ntm"]` -> {"path": "a.txt", "variant": "ntm"} (one-line error when malformed)."""
    out: dict = {}
    for pair in pairs or ():
        key, sep, value = str(pair).partition("=")
        key = key.strip()
        if not sep or not key:
            raise ConfigError(f"--option expects key=value (got {pair!r}).")
        if key in out:
            raise ConfigError(f"--option {key} given twice.")
        out[key] = parse_option_value(value.strip())
    return out


def add_dataset_arguments(parser: argparse.ArgumentParser, kinds: Sequence[str] | None = None,
                          default: str | None = None, split: str = "test") -> None:
    """--dataset (any registered name of these kinds), --split and repeatable --option key=value."""
    names = [n for n in dataset_names() if kinds is None or get_spec(n).kind in kinds]
    parser.add_argument("--dataset", default=default, required=default is None, metavar="NAME",
                        help=f"a registered dataset ({', '.join(names)})")
    parser.add_argument("--split", default=split)
    parser.add_argument("--option", action="append", default=[], metavar="KEY=VALUE",
                        help="a dataset option, repeatable (e.g. path=... kb=... for pq-file, variant=ntm for "
                             "MetaQA, chain_lengths=[4,5] for CLUTRR, questions=FILE for passage datasets)")
    parser.set_defaults(_dataset_kinds=tuple(kinds) if kinds else None)


def check_dataset_arguments(args: argparse.Namespace) -> dict:
    """Validate --dataset / --split / --option without loading anything; returns the parsed options."""
    spec = get_spec(args.dataset)  # unknown names: one line with close matches
    kinds = getattr(args, "_dataset_kinds", None)
    if kinds and spec.kind not in kinds:
        raise ConfigError(f"dataset {spec.name!r} is a {spec.kind} dataset; this script reads {' or '.join(kinds)} "
                          "datasets.")
    if args.split not in spec.splits:
        raise ConfigError(f"dataset {spec.name!r} has splits {', '.join(spec.splits)} (got {args.split!r}).")
    options = parse_options(args.option)
    unknown = sorted(set(options) - set(spec.options))
    if unknown:
        raise ConfigError(f"dataset {spec.name!r} does not take option(s) {', '.join(unknown)} "
                          f"(accepted: {', '.join(spec.options) or 'none'}).")
    return options


def dataset_from_args(args: argparse.Namespace, limit: int | None = None, seed: int = 0, **extra):
    """`load_dataset(args.dataset, args.split, limit, seed, **options, **extra)` after the checks."""
    options = {**check_dataset_arguments(args), **extra}
    return load_dataset(args.dataset, split=args.split, limit=limit, seed=seed, **options)
