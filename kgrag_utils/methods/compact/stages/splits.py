"""Where relation knowledge learns from: the training split of a dataset, and a seeded held-out
validation portion of it (the lift threshold and the gate are chosen there, never on evaluated items)."""

from __future__ import annotations

from typing import Sequence

import numpy as np

from ....errors import ConfigError

__all__ = ["training_split", "split_validation"]


def training_split(dataset_name: str) -> str:
    """The split relation knowledge learns from: 'train' where it exists, else 'dev' (MetaQA)."""
    from ....datasets.registry import get_spec

    splits = get_spec(dataset_name).splits
    for name in ("train", "dev"):
        if name in splits:
            return name
    raise ConfigError(f"dataset {dataset_name!r} has no train or dev split to learn relation knowledge from.")


def split_validation(items: Sequence, fraction: float, seed: int = 0, max_validation: int | None = None):
    """(fit items, validation items): a seeded random held-out portion, both kept in input order."""
    n = len(items)
    n_val = int(round(n * fraction))
    if max_validation is not None:
        n_val = min(n_val, int(max_validation))
    if n < 2 or n_val < 1:
        return list(items), []
    perm = np.random.default_rng(seed).permutation(n)
    val = np.sort(perm[:n_val])
    fit = np.sort(perm[n_val:])
    return [items[i] for i in fit], [items[i] for i in val]
