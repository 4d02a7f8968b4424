"""Shared layers for the KG-RAG notebooks: settings, data, KG, embeddings, LLMs, metrics, runs."""

__version__ = "0.2.0"
