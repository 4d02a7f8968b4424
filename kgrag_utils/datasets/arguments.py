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
import hashlib
import json
from pathlib import Path
from typing import Any, Mapping, Sequence

from ..errors import ConfigError
from .registry import dataset_names, get_spec, load_dataset

__all__ = ["parse_option_value", "parse_options", "add_dataset_arguments", "check_dataset_arguments",
           "dataset_from_args", "evaluation_params", "add_training_arguments", "training_from_args"]


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
    parser.add_argument("--only-ids", default=None, metavar="FILE",
                        help="evaluate only the question ids in FILE (one a line) of the loaded sample, in its order "
                             "(`kgrag reproduce` re-runs a result's first questions this way)")
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
    ds = load_dataset(args.dataset, split=args.split, limit=limit, seed=seed, **options)
    if getattr(args, "only_ids", None):
        ds.items = only_ids(ds.items, args.only_ids)
    return ds


def only_ids(items: list, path: str | Path) -> list:
    """The items whose ids `path` lists (one a line), in the items' order; an id not among them is refused."""
    from .textfiles import read_lines

    wanted = [ln.strip() for ln in read_lines(path) if ln.strip()]
    def ident(q):
        return getattr(q, "qid", None) or getattr(q, "sid", None)

    have = {ident(q) for q in items}
    missing = [i for i in wanted if i not in have]
    if missing:
        raise ConfigError(f"--only-ids {path}: {len(missing)} id(s) are not in the loaded sample (e.g. {missing[0]!r}): "
                          "load it with the same --dataset/--split/--option/--limit/--seed as the run they come from.")
    keep = set(wanted)
    return [q for q in items if ident(q) in keep]


def _identify(value: Any, root: Path | None) -> Any:
    """An option value as the resume key sees it: a value naming a file becomes its path and content hash."""
    if not isinstance(value, str) or not value or len(value) > 4096:
        return value
    path = Path(value)
    if not path.is_absolute() and root is not None and (root / path).is_file():
        path = root / path  # the loaders read a relative file from the dataset folder first
    try:
        if not path.is_file():
            return value
        digest = hashlib.sha256()
        with open(path, "rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                digest.update(block)
    except OSError:
        return value
    return {"file": value, "sha256": digest.hexdigest()[:16]}


def evaluation_params(dataset: str, split: str, options: Mapping[str, Any], default_split: str | None = None) -> dict:
    """What decides which items a benchmark evaluates beyond its method's knobs: the split (when it is not the
    script's default) and every dataset option, a file option by its content (so an edited or another question
    file of the same name is another run). Put it into the run's parameters, so that it enters the run name and
    the resume key: a run never resumes another question file's records. Empty for the defaults, so that the
    keys of runs recorded before these fields existed still hold.
    """
    from .. import settings
    from .registry import GENERATED_SOURCES, _sample_root, get_spec
    from .verify import real_root

    out: dict[str, Any] = {}
    if default_split is not None and split != default_split:
        out["split"] = split
    if options:
        spec = get_spec(dataset)
        if spec.source in GENERATED_SOURCES:
            root = _sample_root(spec)
        else:
            root = real_root(spec) if spec.folder else settings.data_dir()
        out["dataset_options"] = {k: _identify(v, root) for k, v in sorted(options.items())}
    return out


def evaluation_params_from_args(args: argparse.Namespace, default_split: str | None = "test") -> dict:
    """`evaluation_params` of a script's --dataset / --split / --option arguments."""
    return evaluation_params(args.dataset, args.split, check_dataset_arguments(args), default_split)


def add_training_arguments(parser: argparse.ArgumentParser) -> None:
    """--train-split and repeatable --train-option key=value: the training split's own options (the evaluation's
    --option values apply to the evaluated split only, but for those naming the data source, e.g. pq-file's
    path and kb)."""
    parser.add_argument("--train-split", default=None, metavar="SPLIT",
                        help="the split relation knowledge learns from (default: train, or dev for MetaQA)")
    parser.add_argument("--train-option", action="append", default=[], metavar="KEY=VALUE",
                        help="a dataset option of the training split, repeatable (e.g. variant=ntm)")


def training_from_args(args: argparse.Namespace, dataset):
    """The training split of a loaded dataset, with --train-split / --train-option (`training_dataset`)."""
    from .registry import training_dataset

    return training_dataset(dataset, split=args.train_split, options=parse_options(args.train_option))


def training_record(args: argparse.Namespace, train) -> dict:
    """What a result file says about its training data: split, options and size."""
    info = getattr(train, "info", {}) or {}
    return {"split": getattr(train, "split", args.train_split), "options": info.get("options") or {},
            "n": len(getattr(train, "items", train))}
