"""Retrieval-level equality: the vector-rerank pipeline gives the same records on FAISS and on Milvus Lite."""

from __future__ import annotations

import hashlib
import json

import numpy as np
import pytest

from kgrag_utils.datasets import load_dataset
from kgrag_utils.embeddings import Embedder
from kgrag_utils.llm import load_llm
from kgrag_utils.methods.vector_rerank.stages.graph_index import GraphIndex
from kgrag_utils.methods.vector_rerank import VectorRerank, VectorRerankConfig


def _milvus_missing() -> str | None:
    try:
        import milvus_lite  # noqa: F401
        import pymilvus  # noqa: F401
    except ImportError as exc:
        return f"pymilvus + milvus-lite not installed ({exc}); `pip install -e '.[milvus]'`"
    return None


pytestmark = pytest.mark.skipif(_milvus_missing() is not None, reason=str(_milvus_missing()))


class RandomPerText:
    """One seeded Gaussian vector per text: scores are continuous, so near-ties (which two exact
    backends may order differently) are vanishingly rare, and the test checks the plumbing, not the model."""

    def encode(self, texts, batch_size=64, convert_to_numpy=True, show_progress_bar=False):
        rows = []
        for t in texts:
            seed = int.from_bytes(hashlib.sha1(t.encode()).digest()[:8], "little")
            rows.append(np.random.default_rng(seed).standard_normal(48))
        return np.asarray(rows, dtype=np.float32)


def _strip(records):
    out = []
    for r in records:
        r = json.loads(json.dumps(r, default=str))
        r.pop("timings")
        for role in r["graph"].values():  # scores agree to float32 precision, not bit for bit
            # the entity call's seconds are a timing, like "timings" (0.000 vs 0.001 s failed a CI run)
            role["entity_notes"] = [n for n in role.get("entity_notes", []) if not n.startswith("llm_seconds=")]
            for key in ("seed_entities", "seed_relations", "candidates"):
                for row in role[key]:
                    row[-1] = round(row[-1], 3)
        out.append(r)
    return out


def test_same_records_on_faiss_and_milvus_lite(tmp_path):
    ds = load_dataset("sample-passages", limit=6, seed=1)
    emb = Embedder(model=RandomPerText(), model_id="random-per-text", cache=False)

    def respond(text: str) -> str:
        if "List the named entities" in text:
            q = text.split("Question:")[-1]
            return json.dumps([w for w in q.replace("?", "").split() if w[:1].isupper()][1:3])
        return '{"reasoning": "r", "ids": [3, 1, 2]}'

    cfg = VectorRerankConfig(entity_min_score=-1.0, degree=2, candidate_cap=25)
    runs = {}
    for backend in ("faiss", "milvus"):
        index = GraphIndex.build(ds.corpus, ds.triples, emb, backend=backend, milvus_uri=str(tmp_path / "vr.db"))
        llm = load_llm("fake", responses=respond, cache=False)
        runs[backend] = _strip(VectorRerank(cfg, index, llm).run(ds.items, progress=False))
        assert index.backend == backend
        index.close()
    assert runs["faiss"] == runs["milvus"]
    assert any(r["variants"]["rerank"]["passages"] for r in runs["faiss"])


@pytest.mark.slow
@pytest.mark.realdata
def test_musique_no_llm_variants_agree_on_faiss_and_milvus_lite(real_data, tmp_path):
    """Real passages, released triples and MiniLM (a 400-passage slice of MuSiQue that holds the gold passages of
    20 questions, to keep the embedding short): naive and expand give the same passages on both stores."""
    from kgrag_utils.embeddings import load_embedder

    ds = load_dataset("musique", limit=20, seed=0)
    gold = {pid for q in ds.items for pid in q.supporting}
    corpus = [p for i, p in enumerate(ds.corpus) if i < 400 or p.pid in gold]
    emb = load_embedder("minilm")
    cfg = VectorRerankConfig(dataset="musique", variants="naive,expand")
    passages = {}
    for backend in ("faiss", "milvus"):
        index = GraphIndex.build(corpus, ds.triples, emb, backend=backend, milvus_uri=str(tmp_path / "mq.db"),
                                 progress=False)
        assert index.num_relations > 3000
        recs = VectorRerank(cfg, index).run(ds.items, progress=False)
        passages[backend] = {r["id"]: {v: r["variants"][v]["passages"] for v in ("naive", "expand")} for r in recs}
        index.close()
    assert passages["faiss"] == passages["milvus"]
    assert sum(bool(p["expand"]) for p in passages["faiss"].values()) >= 15
