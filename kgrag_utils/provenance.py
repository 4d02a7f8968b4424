"""What produced a result: the environment (Python, platform, package versions, device).

Run records (`records.RunRecorder`) and benchmark result files store it beside their parameters.
"""

from __future__ import annotations

import os
import platform
import sys
from typing import Any

_PACKAGES = (
    "numpy", "scipy", "pandas", "networkx", "torch", "transformers", "accelerate", "bitsandbytes",
    "sentence-transformers", "faiss-cpu", "faiss-gpu-cu12", "llama_cpp_python", "pymilvus", "papermill",
    "kgrag-utils",
)


def environment_info() -> dict[str, Any]:
    """Python, platform, versions of the packages that change results, and the compute device."""
    from importlib import metadata

    versions = {}
    for name in _PACKAGES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            pass
    device = "cpu"
    gpu = None
    if "torch" in sys.modules or versions.get("torch"):
        try:
            import torch

            if torch.cuda.is_available():
                device = "cuda"
                gpu = torch.cuda.get_device_name(0)
        except Exception:  # pragma: no cover - broken torch installs
            pass
    return {
        "python": platform.python_version(),
        "platform": platform.platform(),
        "machine": platform.machine(),
        "cpu_count": os.cpu_count(),
        "device": device,
        "gpu": gpu,
        "packages": versions,
    }


