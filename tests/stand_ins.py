"""Deterministic stand-ins shared by tests (no model downloads, no randomness)."""

from __future__ import annotations

import hashlib
import re

import numpy as np


class HashBOW:
    """A stand-in for a sentence encoder: a hashed bag of words (same text -> same vector)."""

    def __init__(self, dim: int = 256):
        self.dim = dim

    def encode(self, texts, batch_size=64, convert_to_numpy=True, show_progress_bar=False):
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for i, t in enumerate(texts):
            for w in re.findall(r"\w+", t.lower()):
                out[i, sum(map(ord, w)) * 2654435761 % self.dim] += 1.0
            out[i, 0] += 0.01
        return out


class WordsEmbedder:
    """Unit bag-of-words vectors (each word hashed to a dimension): shared words make texts near."""

    dim = 256
    model_id = "test-words"

    def __init__(self):
        self.calls = 0

    def encode(self, texts, progress=None):
        self.calls += 1
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for i, t in enumerate(texts):
            for w in t.lower().split():
                out[i, int.from_bytes(hashlib.blake2b(w.encode(), digest_size=4).digest(), "little") % self.dim] += 1
            out[i] /= max(np.linalg.norm(out[i]), 1e-9)
        return out


def benchmark_module(name: str, module_name: str | None = None):
    """A script under benchmarks/ imported as a module (the scripts are not a package)."""
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[1] / "benchmarks" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(module_name or name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod
