"""The GPU check's device helpers, shared by its parts (benchmarks/gpu_check.py, benchmarks/gpu_throughput.py):
a part's results written as it goes, the device, synchronisation, memory figures, a one-line exception."""

from __future__ import annotations

import gc
import resource
from pathlib import Path

from kgrag_utils.records import atomic_write_json

def short(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0][:400] if text else ''}"


class Partial:
    """A part's results, written to disk after every step (the parent reads them even after a kill)."""

    def __init__(self, path: Path):
        self.path = path
        self.data: dict = {"complete": False, "steps": {}}
        self.save()

    def step(self, name: str, value) -> None:
        self.data["steps"][name] = value
        self.save()

    def set(self, key: str, value) -> None:
        self.data[key] = value
        self.save()

    def save(self) -> None:
        atomic_write_json(self.path, self.data)


def device(dry: bool) -> str:
    import torch

    if dry:
        return "cpu"
    if not torch.cuda.is_available():
        raise RuntimeError("no CUDA device visible to torch")
    return "cuda"


def sync(device: str) -> None:
    if device == "cuda":
        import torch

        torch.cuda.synchronize()


def free(device: str) -> None:
    gc.collect()
    if device == "cuda":
        import torch

        torch.cuda.empty_cache()


def memory(device: str) -> dict:
    if device == "cuda":
        import torch

        return {"gpu_allocated_gib": round(torch.cuda.memory_allocated() / 2**30, 3),
                "gpu_peak_allocated_gib": round(torch.cuda.max_memory_allocated() / 2**30, 3),
                "gpu_peak_reserved_gib": round(torch.cuda.max_memory_reserved() / 2**30, 3)}
    return {"cpu_peak_rss_gib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20, 3)}


def reset_peak(device: str) -> None:
    if device == "cuda":
        import torch

        torch.cuda.reset_peak_memory_stats()
