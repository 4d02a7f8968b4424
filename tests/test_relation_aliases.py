"""Relation aliases (kgrag_utils.relation_aliases, SimGRAG's `relation_aliases`): phrases mined from single-relation
training questions, never from the evaluated split, and a relation's distance the smallest over its name and aliases.

Synthetic questions and vectors; the sample movie datasets for the splits and the method's prepare (with
test_demos.py's bag-of-words stand-in embedder: no model is loaded)."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from kgrag_utils import relation_aliases as ra
from kgrag_utils.datasets import load_dataset
from kgrag_utils.errors import ConfigError
from kgrag_utils.kg import KG
from kgrag_utils.methods.simgrag import SimGRAG, SimGRAGConfig
from kgrag_utils.methods.simgrag.stages.gsd_search import GSDConfig, GSDRetriever, alias_rows, relation_distances
from kgrag_utils.methods.simgrag.stages.pattern import Pattern
from stand_ins import WordsEmbedder


def _q(question, topic, relation, forward=True):
    return SimpleNamespace(question=question, topic_entities=[topic], chain=[(relation, forward)])


def _synthetic():
    items = []
    for i in range(6):
        items.append(_q(f"what films has [Actor {i}] appeared in", f"Actor {i}", "starred_actors", False))
        items.append(_q(f"who appeared in [Film {i}]", f"Film {i}", "starred_actors"))
        items.append(_q(f"who is the director of [Film {i}]", f"Film {i}", "directed_by"))
        items.append(_q(f"what films were directed by [Person {i}]", f"Person {i}", "directed_by", False))
        items.append(_q(f"what is the language of [Film {i}] films", f"Film {i}", "in_language"))
    items.append(_q("who appeared in [Film 9]", "Film 9", "directed_by"))  # one noisy label: precision 12/13
    items.append(_q("which films did [A] and [B] make", "A", "starred_actors"))  # a 2-topic line: still one relation
    items.append(SimpleNamespace(question="who appeared in films directed by [P]", topic_entities=["P"],
                                 chain=[("directed_by", False), ("starred_actors", True)]))  # 2 relations: not used
    return items


def test_aliases_are_the_precise_frequent_ngrams_without_the_topic():
    assert ra.question_ngrams("who appeared in [Film 1]", ["Film 1"]) >= {"appeared", "appeared in", "who appeared in"}
    assert not any("film" in g for g in ra.question_ngrams("who appeared in [Film 1]", ["Film 1"]))
    # no n-gram crosses the removed entity
    assert "of was" not in ra.question_ngrams("the director of [X Men] was who", ["X Men"])
    aliases = ra.mine_aliases(_synthetic())
    # "appeared" (13 questions, 12 of them starred_actors: 0.92) is kept; "appeared in" holds it, so it takes no slot
    assert aliases["starred_actors"] == ["appeared"]
    assert aliases["directed_by"] == ["directed", "director"]  # equal counts: fewer words, then alphabetical
    assert aliases["in_language"] == ["language"]
    # function words ("who", "is the") and words of 3+ relations ("films") never make an alias alone ("films has")
    assert not any(set(g.split()) <= ra.STOPWORDS | {"films"} for a in aliases.values() for g in a)
    # a stricter precision drops the noisy alias; a higher minimum count drops them all; the cap keeps the first
    assert "starred_actors" not in ra.mine_aliases(_synthetic(), min_precision=0.95)
    assert ra.mine_aliases(_synthetic(), min_count=20) == {}
    assert ra.mine_aliases(_synthetic(), max_per_relation=1)["directed_by"] == ["directed"]
    # a relation's own name is no alias of it, nor an n-gram that holds it
    own = [_q(f"what genre kind is [F{i}]", f"F{i}", "genre") for i in range(5)]
    assert ra.mine_aliases(own) == {"genre": ["kind"]}


def test_the_mined_questions_are_a_training_split_never_the_evaluated_one():
    test = load_dataset("sample-movies-1hop", split="test")
    train = ra.training_items(test, "train")
    assert train and {it.qid for it in train}.isdisjoint({it.qid for it in test.items})
    assert all("-dev-" in it.qid for it in train)
    dev = load_dataset("sample-movies-1hop", split="dev")
    with pytest.raises(ConfigError, match="training split"):
        ra.training_items(dev, "train")
    with pytest.raises(ConfigError, match="evaluated split"):
        ra.training_items(dev, "sample-movies-1hop")
    two = load_dataset("sample-movies-2hop", split="test")
    with pytest.raises(ConfigError, match="single-relation"):
        ra.aliases_for(two, "train", two.kg.relation_names)  # its training questions have 2-relation chains
    aliases = ra.aliases_for(two, "sample-movies-1hop", two.kg.relation_names)  # the 1-hop twin's dev split
    assert aliases and set(aliases) <= set(two.kg.relation_names.tolist())


def test_a_relation_distance_is_the_smallest_over_its_name_and_aliases():
    rng = np.random.default_rng(3)
    for n_rel, m in ((9, 16), (60, 4)):  # all relations exact, and the preselection of 2m of them
        names = rng.normal(size=(n_rel, 16))
        aliases = rng.normal(size=(3 * n_rel, 16))
        rows = np.vstack([names, aliases])
        rows /= np.linalg.norm(rows, axis=1, keepdims=True)
        owners = np.concatenate([np.arange(n_rel), rng.integers(0, n_rel, size=3 * n_rel)])
        queries = np.vstack([rng.normal(size=(3, 16)), rows[[n_rel + 2]]])  # the last one is an alias exactly
        got = relation_distances(queries, rows, m, owners)
        full = np.linalg.norm(queries[:, None, :] - rows[None], axis=2)
        best = np.full((queries.shape[0], n_rel), np.inf)
        for i, r in enumerate(owners):
            best[:, r] = np.minimum(best[:, r], full[:, i])
        for j in range(queries.shape[0]):
            keep = np.flatnonzero(np.isfinite(got[j]))
            assert sorted(keep.tolist()) == sorted(np.argsort(best[j])[:min(m, n_rel)].tolist())
            np.testing.assert_allclose(got[j, keep], best[j, keep], rtol=0, atol=1e-12)
        assert got[3, owners[n_rel + 2]] == pytest.approx(0.0, abs=1e-12)
        # each relation's own name only (no alias rows): the same as without owners
        plain = relation_distances(queries, rows[:n_rel], m)
        np.testing.assert_array_equal(relation_distances(queries, rows[:n_rel], m, np.arange(n_rel)), plain)


def test_an_alias_brings_a_pattern_relation_to_its_kg_relation():
    kg = KG.from_triples([("Film A", "starred_actors", "Ann Lee"), ("Film A", "directed_by", "Bo Chan")])
    emb = WordsEmbedder()
    retriever = GSDRetriever.from_embedder(kg, emb)
    pattern = Pattern.from_triples([("Film A", "appeared", "UNKNOWN person 1")], answer="UNKNOWN person 1")
    before = retriever.retrieve(pattern, GSDConfig(top_k=2))[0]
    assert before.best.gsd == pytest.approx(before.subgraphs[1].gsd)  # "appeared" shares no word with either name
    with pytest.raises(ConfigError, match="not this KG's"):
        retriever.set_relation_aliases({"acted_in": ["appeared"]})
    retriever.set_relation_aliases({"starred_actors": ["appeared"]})
    after = retriever.retrieve(pattern, GSDConfig(top_k=2))[0]
    assert after.best.triples(kg) == [("Film A", "starred_actors", "Ann Lee")]
    assert after.best.gsd == pytest.approx(0.0, abs=1e-6) and after.subgraphs[1].gsd == pytest.approx(before.best.gsd)
    rows, owners = alias_rows(kg.relation_names, retriever.relation_vectors, {"starred_actors": ["appeared"]}, emb.encode)
    assert rows.shape[0] == kg.num_relations + 1 and owners[-1] == kg.relation_id("starred_actors")


def test_prepare_mines_once_and_off_is_the_paper_s_names_only():
    dataset = load_dataset("sample-movies-2hop", split="test", limit=4)
    emb = WordsEmbedder()
    off = SimGRAG.prepare(SimGRAGConfig(dataset="sample-movies-2hop", pattern_source="oracle", reader=False), dataset,
                          embedder=emb)
    assert off.retriever.relation_aliases == {} and off.retriever._relation_owners is None
    on_config = SimGRAGConfig(dataset="sample-movies-2hop", pattern_source="oracle", reader=False,
                              relation_aliases="sample-movies-1hop")
    on = SimGRAG.prepare(on_config, dataset, embedder=emb)
    assert on.retriever.relation_aliases and on.retriever._relation_owners is not None
    with pytest.raises(ConfigError, match="the retriever has none"):
        SimGRAG(on_config, dataset.kg, off.retriever)
    with pytest.raises(ConfigError, match="did you mean 'sample-movies-1hop'"):
        SimGRAGConfig(relation_aliases="sample-movies-1hp")
