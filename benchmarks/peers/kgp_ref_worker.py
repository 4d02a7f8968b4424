"""Run the KGP reference's retrievers (yuwvandy/KG-LLM-MDQA, Pipeline/retriever.py, passed by path) on given sets.

Runs in the peer's environment, started by benchmarks/peers/kgp_ref.py with one line per question (the
question, its (title, chunk) pairs, the passage graphs as adjacency lists). Per question, the reference's own
TF_IDF_retriever, BM25_retriever and KG_retriever ("KGP w/o LLM") with budget k over each graph; their chunk
texts are mapped back to passage indices (first occurrence). Libraries its modules import but these classes
never call (UNUSED) are stand-ins that raise when touched, so a class that needed one fails loudly.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import types

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from worker_io import run_pending  # noqa: E402

UNUSED = ("langchain", "langchain.prompts", "langchain.chains", "langchain.chains.llm", "torch", "torch_scatter",
          "Levenshtein", "spacy", "sentence_transformers", "requests")


class _Refusing:
    """What a stand-in returns (e.g. spacy.load(...) at import): any use of it raises."""

    def __init__(self, name: str):
        self._name = name

    def __call__(self, *a, **k):
        raise RuntimeError(f"{self._name} is a stand-in: this baseline was not expected to use it")

    def __getattr__(self, attr):
        if attr.startswith("__"):
            raise AttributeError(attr)
        raise RuntimeError(f"{self._name}.{attr} is a stand-in: this baseline was not expected to use it")


class _Unused(types.ModuleType):
    """A module the reference imports but these baselines never use: names resolve, calls give _Refusing."""

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return lambda *a, **k: _Refusing(f"{self.__name__}.{name}(...)")


def load_reference(reference_dir: str):
    for name in UNUSED:
        sys.modules.setdefault(name, _Unused(name))
    sys.path.insert(0, os.path.join(os.path.abspath(reference_dir), "Pipeline"))
    import retriever  # the reference's Pipeline/retriever.py

    return retriever


def run_one(ref, row: dict, k: int) -> dict:
    import networkx as nx

    data = {"question": row["question"], "title_chunks": [[t, c] for t, c in zip(row["titles"], row["chunks"])]}
    index = {}
    for i, c in enumerate(row["chunks"]):
        index.setdefault(c, i)
    ids = lambda texts: [index[t] for t in texts]  # noqa: E731
    out, seconds = {"id": row["id"]}, {}
    for name, retriever in (("tfidf", ref.TF_IDF_retriever), ("bm25", ref.BM25_retriever)):
        t0 = time.perf_counter()
        out[name] = ids(retriever(k).retrieve(data))
        seconds[name] = time.perf_counter() - t0
    for name, adj in row["graphs"].items():
        G = nx.Graph()
        G.add_nodes_from(range(len(row["chunks"])))
        G.add_edges_from((i, j) for i, nbrs in enumerate(adj) for j in nbrs)
        t0 = time.perf_counter()
        texts = ref.KG_retriever(k).retrieve(data, G)[0]
        seconds[f"kg_{name}"] = time.perf_counter() - t0
        out[f"kg_{name}"] = ids(texts)
    out["seconds"] = {key: round(v, 4) for key, v in seconds.items()}
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--reference-dir", required=True)
    ap.add_argument("--sets", required=True, help="JSON lines: id, question, titles, chunks, graphs")
    ap.add_argument("--out", required=True)
    ap.add_argument("--k", type=int, default=30)
    args = ap.parse_args(argv)
    ref = load_reference(args.reference_dir)
    rows = [json.loads(line) for line in open(args.sets, encoding="utf-8")]
    run_pending(rows, args.out, lambda row: run_one(ref, row, args.k))
    return 0


if __name__ == "__main__":
    sys.exit(main())
