"""KGP passage-graph constructors and their statistics."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from kgrag_utils.datasets.items import Passage, PassageQuestion
from kgrag_utils.errors import ConfigError
from kgrag_utils.methods.kgp.stages.docsets import PassageCorpus
from kgrag_utils.methods.kgp.stages.graphs import PassageGraph, build_graph, knn_graph
from kgrag_utils.methods.kgp.stages.similarity import SetIndex
from kgrag_utils.methods.kgp.stages.entities import capitalised_names, entity_matrix, title_stem
from kgrag_utils.methods.kgp.stages.graphs import keyword_matrix, structural_edges


def _set(docs: list[tuple[str, str]], rule: str = "paragraph"):
    corpus = [Passage(pid=t, title=t, text=x) for t, x in docs]
    q = PassageQuestion(qid="q", question="?", answers=[], paragraphs=corpus, supporting=[], supporting_titles=[],
                        qtype=None)
    pc = PassageCorpus(corpus, rule=rule, window=1, stride=1, title_in_text=False)
    return pc.question_set(q, target=0)


def _linked(g: PassageGraph, dset, a: str, b: str) -> bool:
    i, j = dset.pids.index(a), dset.pids.index(b)
    return bool(g.adj[i, j]) and bool(g.adj[j, i])


FILLER = [(f"Filler{i}", f"ordinary text about gardens number {i} with flowers") for i in range(20)]


def test_tfidf_keywords_are_taken_per_passage_not_from_the_first_row():
    # the reference code kept only row 0's keywords; "zeppelin" is never among row 0's terms
    docs = [("First", "apples oranges bananas fruit salad"), ("P1", "zeppelin airship flight"),
            ("P2", "zeppelin hangar museum")] + FILLER
    dset = _set(docs)
    index = SetIndex(dset.texts)
    occ, vocab = keyword_matrix(index.matrix, n_keywords=3, max_df=0.5)
    terms = set(index.vectorizer.get_feature_names_out()[vocab])
    assert "zeppelin" in terms and "apples" in terms or "oranges" in terms
    g = build_graph(dset, "tfidf", tfidf=index.matrix, n_keywords=3, keyword_max_df=0.5, keyword_titles=False)
    assert _linked(g, dset, "P1", "P2")
    assert not _linked(g, dset, "First", "P1")


def test_tfidf_keyword_in_too_many_passages_is_dropped():
    docs = [(f"D{i}", f"common banana word{i} uniqueterm{i}") for i in range(20)]
    dset = _set(docs)
    index = SetIndex(dset.texts)
    dense = build_graph(dset, "tfidf", tfidf=index.matrix, n_keywords=3, keyword_max_df=1.0, keyword_titles=False)
    sparse = build_graph(dset, "tfidf", tfidf=index.matrix, n_keywords=3, keyword_max_df=0.1, keyword_titles=False)
    assert dense.n_edges == 20 * 19 // 2  # everything shares "common"/"banana"
    assert sparse.n_edges == 0


def test_tfidf_graph_links_a_passage_that_mentions_a_document_title():
    docs = [("Alf Clausen", "composer and arranger of television music"),
            ("The Simpsons Theme", "the theme was arranged by Alf Clausen for years")] + FILLER
    dset = _set(docs)
    index = SetIndex(dset.texts)
    with_titles = build_graph(dset, "tfidf", tfidf=index.matrix, n_keywords=1, keyword_titles=True)
    without = build_graph(dset, "tfidf", tfidf=index.matrix, n_keywords=1, keyword_titles=False)
    assert _linked(with_titles, dset, "Alf Clausen", "The Simpsons Theme")
    assert not _linked(without, dset, "Alf Clausen", "The Simpsons Theme")


def test_knn_graph_links_nearest_vectors_symmetrically():
    e = np.array([[1, 0], [0.99, 0.1], [0, 1], [0.1, 0.99], [-1, 0]], dtype=np.float32)
    e /= np.linalg.norm(e, axis=1, keepdims=True)
    a = knn_graph(e, k=1)
    assert (a != a.T).nnz == 0 and a.diagonal().sum() == 0
    assert a[0, 1] and a[2, 3] and not a[0, 2]
    assert (np.diff(a.indptr) >= 1).all()
    directed = knn_graph(e, k=2, symmetric=False)
    assert (np.diff(directed.indptr) == 2).all()


def test_knn_graph_needs_embeddings():
    dset = _set(FILLER[:4])
    with pytest.raises(ConfigError):
        build_graph(dset, "knn")


def test_title_stem_and_capitalised_names():
    assert title_stem("Lilu (mythology)") == "Lilu"
    names = capitalised_names("The Eiffel Tower stands in Paris. He met John of Gaunt in the Tower of London.")
    assert "eiffel tower" in names and "paris" in names and "john of gaunt" in names and "tower of london" in names
    assert "he" not in names and "the" not in names


def test_entity_graph_links_title_mentions_and_shared_names():
    docs = [("Lilu (mythology)", "Lilu is a demon of Mesopotamian lore."),
            ("Alu", "The Alu is related to Lilu and to the Gallu Demons."),
            ("Gallu Demons", "Gallu Demons appear in Akkadian texts."),
            ("Other", "Nothing shared here at all.")] + FILLER
    dset = _set(docs)
    g = build_graph(dset, "entity", entity_max_df=0.5)
    assert _linked(g, dset, "Alu", "Lilu (mythology)")  # mentions the title stem "Lilu"
    assert _linked(g, dset, "Alu", "Gallu Demons")
    assert not _linked(g, dset, "Other", "Alu")
    m, labels = entity_matrix(dset.texts, dset.doc_index, dset.doc_titles, max_df=0.5)
    assert m.shape[1] == len(labels) and "title:Lilu (mythology)" in labels


def test_structural_edges_join_passages_of_one_document():
    docs = [("A", "One. Two. Three."), ("B", "Four. Five.")]
    dset = _set(docs, rule="sentences")
    s = structural_edges(dset)
    a_idx = [i for i, t in enumerate(dset.titles) if t == "A"]
    assert s[a_idx[0], a_idx[1]] and s[a_idx[1], a_idx[2]]
    assert s.nnz == 2 * (3 + 1)
    g = build_graph(dset, "none", structural=True)
    assert g.stats()["doc_nodes"] == 2 and g.n_edges == 4


def test_graph_stats_on_a_known_graph():
    adj = sp.csr_matrix(np.array([[0, 1, 1, 0], [1, 0, 1, 0], [1, 1, 0, 0], [0, 0, 0, 0]], dtype=np.int8))
    st = PassageGraph(kind="x", adj=adj).stats()
    assert st["edges"] == 3 and st["nodes"] == 4
    assert st["density"] == pytest.approx(3 / 6) and st["avg_degree"] == pytest.approx(1.5)
    assert st["isolated"] == 1 and st["max_degree"] == 2
    assert PassageGraph(kind="x", adj=adj).neighbors(0).tolist() == [1, 2]


def test_union_is_the_or_of_its_parts():
    docs = [("Alf Clausen", "composer of music"), ("Theme", "arranged by Alf Clausen zeppelin"),
            ("Z", "zeppelin airship")] + FILLER
    dset = _set(docs)
    index = SetIndex(dset.texts)
    rng = np.random.default_rng(0)
    emb = rng.normal(size=(len(dset), 8)).astype(np.float32)
    emb /= np.linalg.norm(emb, axis=1, keepdims=True)
    kw = dict(tfidf=index.matrix, embeddings=emb, n_keywords=3, keyword_max_df=0.3, knn_k=2, entity_max_df=0.3)
    parts = [build_graph(dset, k, **kw).adj for k in ("tfidf", "knn", "entity")]
    union = build_graph(dset, "union", **kw).adj
    expected = (parts[0] + parts[1] + parts[2]) > 0
    assert (union.astype(bool) != expected).nnz == 0
    with pytest.raises(ConfigError):
        build_graph(dset, "pagerank")
