"""The KG-RAG methods reproduced by the notebooks, one subpackage each (e.g. `methods.simgrag`).

Each method builds on the shared layers (kg, datasets, embeddings, vector_index, llm, metrics,
records) and keeps its own prompts, retrieval and per-example records.
"""
