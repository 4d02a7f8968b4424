"""Shared layers for the KG-RAG notebooks: settings, data, KG, embeddings, LLMs, metrics, runs."""

__version__ = "0.2.0"

from . import threads as _threads
from .errors import ConfigError as _ConfigError

try:  # before torch, FAISS or llama.cpp load: the OpenMP/BLAS variables they read once (kgrag_utils/threads.py)
    _threads.prepare_environment()
except _ConfigError:  # a malformed KGRAG_THREADS: reported (one line) when a component asks for its threads
    pass
