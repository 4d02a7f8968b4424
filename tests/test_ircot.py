"""IRCoT's annotated training questions (datasets/ircot.py) and demo_pool="ircot" (demos.py, vector rerank, KGP).

The format tests write a two-question copy in the released layout (jsonnet annotations and a prompt file); the
`realdata` tests read the shared copy. The embedder is a hashed bag of words (tests/stand_ins.py; no model).
"""

from __future__ import annotations

import pytest
from stand_ins import HashBOW

from kgrag_utils.datasets import ircot, load_dataset
from kgrag_utils.datasets.items import Dataset
from kgrag_utils.demos import DEMO_POOLS, DemoPool
from kgrag_utils.errors import ConfigError, DatasetFormatError

pytest.importorskip("_jsonnet")

ANNOTATION = """[
    # 1
    {
        "question_id": "2hop__1_2",
        "question_text": "Where was the founder of Halvane Optics born?",
        "reasoning_steps": [
            {
                "paragraphs": [{"title": "Halvane Optics", "text_substring": "Halvane Optics was founded"}],
                "cot_sent": "Halvane Optics was founded by Pieter Halvane.",
            },
            {
                "paragraphs": [{"title": "Pieter Halvane", "text_substring": "Pieter Halvane was born"}],
                "cot_sent": "Pieter Halvane was born in Ostmere.",
            },
            {
                "paragraphs": [{"title": null, "text_substring": null}],
                "cot_sent": "So the answer is: Ostmere.",
            },
        ]
    },
    # 2
    {
        "question_id": "2hop__3_4",
        "question_text": "When was the river that flows through Ostmere named?",
        "reasoning_steps": [
            {"paragraphs": [{"title": "Ostmere", "text_substring": "Ostmere lies"}],
             "cot_sent": "The Vell flows through Ostmere."},
            {"paragraphs": [{"title": "Vell", "text_substring": "The Vell was named"}],
             "cot_sent": "The Vell was named in 1602."},
            {"paragraphs": [{"title": null, "text_substring": null}], "cot_sent": "So the answer is: 1602."},
        ]
    },
]
"""

PROMPT = """# METADATA: {"qid": "2hop__1_2"}
Wikipedia Title: Pieter Halvane
Pieter Halvane was born in Ostmere. He studied glassmaking.

Wikipedia Title: Lenscraft
Lenscraft is a trade journal. It appears monthly.

Wikipedia Title: Halvane Optics
Halvane Optics was founded by Pieter Halvane in 1951.

Q: Where was the founder of Halvane Optics born?
A: Halvane Optics was founded by Pieter Halvane. Pieter Halvane was born in Ostmere. So the answer is: Ostmere.


# METADATA: {"qid": "2hop__3_4"}
Wikipedia Title: Vell
The Vell was named in 1602 by surveyors.

Wikipedia Title: Ostmere
Ostmere lies on the Vell.

Q: When was the river that flows through Ostmere named?
A: The Vell flows through Ostmere. The Vell was named in 1602. So the answer is: 1602.
"""


def _write(root, annotation=ANNOTATION, prompt=PROMPT, name="musique"):
    (root / "prompt_generator" / "data_annotations").mkdir(parents=True, exist_ok=True)
    (root / "prompts" / name).mkdir(parents=True, exist_ok=True)
    (root / "prompt_generator" / "data_annotations" / f"{name}.jsonnet").write_text(annotation)
    (root / "prompts" / name / ircot.PROMPT_FILE).write_text(prompt)
    return root


def test_released_format_reads_reasoning_support_in_step_order_and_answers(tmp_path):
    questions, corpus, info = ircot.read_questions(_write(tmp_path), "musique")
    first, second = questions
    assert first.qid == "2hop__1_2" and first.answers == ["Ostmere"] and first.qtype == "2hop"
    # the prompt shows Pieter Halvane first; the support follows the reasoning steps
    assert first.supporting_titles == ["Halvane Optics", "Pieter Halvane"]
    assert first.meta["reasoning"] == ["Halvane Optics was founded by Pieter Halvane.", "Pieter Halvane was born in Ostmere."]
    assert [p.title for p in first.paragraphs] == ["Pieter Halvane", "Lenscraft", "Halvane Optics"]
    assert first.paragraphs[0].text == "Pieter Halvane was born in Ostmere. He studied glassmaking."
    assert second.answers == ["1602"] and second.supporting_titles == ["Ostmere", "Vell"]
    assert len(corpus) == 5 and info["reasoning_steps"] == 4
    assert set(first.supporting) <= {p.pid for p in first.paragraphs}


def test_broken_copies_are_one_line_errors(tmp_path):
    with pytest.raises(DatasetFormatError, match="no demonstration for the annotated question.*2hop__3_4"):
        ircot.read_questions(_write(tmp_path / "a", prompt=PROMPT.split("\n\n\n")[0]), "musique")
    with pytest.raises(DatasetFormatError, match="names the paragraph 'Vell'"):
        ircot.read_questions(_write(tmp_path / "b", prompt=PROMPT.replace("Wikipedia Title: Vell\n", "Wikipedia Title: Tay\n")),
                             "musique")
    with pytest.raises(DatasetFormatError, match="not valid jsonnet"):
        ircot.read_questions(_write(tmp_path / "c", annotation=ANNOTATION[:-5]), "musique")
    with pytest.raises(DatasetFormatError, match="METADATA"):
        ircot.read_prompt_blocks(_write(tmp_path / "d", prompt="# METADATA: {qid}\nQ: x\n")
                                 / "prompts" / "musique" / ircot.PROMPT_FILE)


def _ircot_dataset(root) -> Dataset:
    questions, corpus, _ = ircot.read_questions(root, "musique")
    return Dataset(name="ircot-musique", kind="passages", split="train", items=questions, corpus=corpus)


def test_rerank_demo_shows_the_reasoning_sentences_as_the_gold_facts(tmp_path):
    from kgrag_utils.methods.vector_rerank.stages.demos import DEMO_FACT_CHARS, rerank_demo, reasoning_rerank_demo

    train = _ircot_dataset(_write(tmp_path))
    demo = reasoning_rerank_demo(train.items[0])
    gold = [demo["facts"][i - 1] for i in demo["ids"]]
    assert gold == train.items[0].meta["reasoning"]  # hop order
    assert "Lenscraft is a trade journal." in demo["facts"] and len(demo["facts"]) == 3
    assert all(len(f) <= DEMO_FACT_CHARS + 4 for f in demo["facts"])
    pool = DemoPool.of_training(train, HashBOW(), lambda item, t: True, "x")
    assert rerank_demo(pool, train.items[1])["ids"] and reasoning_rerank_demo(train.items[0]) == demo  # seeded order
    no_reasoning = train.items[0]
    no_reasoning.meta = {}
    assert reasoning_rerank_demo(no_reasoning) is None


def test_ircot_pool_comes_from_the_benchmarks_ircot_dataset_and_refuses_others(tmp_path, monkeypatch):
    """demo_pool="ircot": DemoPool.build loads the IRCoT dataset named for the evaluated one (ircot.POOL_FOR)."""
    from kgrag_utils.datasets import registry
    from kgrag_utils.methods.vector_rerank.stages.demos import rerank_demo_pool

    train = _ircot_dataset(_write(tmp_path))
    asked = []
    monkeypatch.setattr(registry, "load_dataset", lambda name, split="test", **kw: asked.append((name, split)) or train)
    evaluated = Dataset(name="musique", kind="passages", split="test", items=[], corpus=[])
    pool = rerank_demo_pool(evaluated, HashBOW(), pool="ircot")
    assert asked == [("ircot-musique", "train")] and pool.ids == ["2hop__1_2", "2hop__3_4"] and pool.folds == 0
    chosen = pool.nearest(train.items[0], 2)
    assert [d.id for d in chosen] == ["2hop__3_4"]  # never the question itself
    assert "ircot" in DEMO_POOLS
    with pytest.raises(ConfigError, match="IRCoT annotated training questions exist for.*not 'sample-passages'"):
        DemoPool.build(Dataset(name="sample-passages", kind="passages", split="all", items=[]), HashBOW(),
                       lambda item, t: True, "x", pool="ircot")


def test_configs_take_the_ircot_pool_with_nearest_demos_only():
    from kgrag_utils.methods.kgp import KGPConfig
    from kgrag_utils.methods.vector_rerank import VectorRerankConfig

    cfg = VectorRerankConfig(dataset="musique", demos="nearest", demo_pool="ircot")
    assert cfg.run_key()["demo_pool"] == "ircot"  # another pool is another run
    assert KGPConfig(dataset="musique", demos="nearest", demo_pool="ircot").demo_pool == "ircot"
    with pytest.raises(ConfigError, match="demo_pool='ircot'.*demos='nearest'"):
        VectorRerankConfig(dataset="musique", demo_pool="ircot")
    with pytest.raises(ConfigError, match="demo_pool='ircot'.*demos='nearest'"):
        KGPConfig(dataset="musique", demo_pool="ircot")


@pytest.mark.realdata
def test_real_ircot_questions_are_not_evaluated_ones(real_data):
    """The shared copy: 20 / 29 / 20 annotated questions, each with at least two gold paragraphs and a reasoning
    sentence per hop, none of them (by id or text) among the evaluated MuSiQue / HotpotQA questions."""
    for name, n in (("ircot-musique", 20), ("ircot-hotpotqa", 29), ("ircot-2wiki", 20)):
        ds = load_dataset(name, split="train")
        assert len(ds.items) == n and ds.info["supporting_not_in_corpus"] == 0
        assert all(len(q.supporting) >= 2 and len(q.meta["reasoning"]) >= 2 and q.answers for q in ds.items)
    for evaluated, pool in (("musique", "ircot-musique"), ("hotpotqa", "ircot-hotpotqa")):
        ev = load_dataset(evaluated, split="test")
        demos = load_dataset(pool, split="train")
        assert not {q.qid for q in ev.items} & {q.qid for q in demos.items}
        assert not {q.question.casefold() for q in ev.items} & {q.question.casefold() for q in demos.items}


@pytest.mark.realdata
def test_real_musique_kgp_and_rerank_pools(real_data):
    from kgrag_utils.methods.kgp.stages.demos import agent_demo, agent_demo_pool
    from kgrag_utils.methods.vector_rerank.stages.demos import rerank_demo, rerank_demo_pool

    evaluated = load_dataset("musique", split="test", limit=3, openie=False)
    for build in (rerank_demo_pool, agent_demo_pool):
        pool = build(evaluated, HashBOW(), pool="ircot")
        assert len(pool) == 20 and pool.dataset == "ircot-musique"
    demo = rerank_demo(pool, pool.items[0])
    assert len(demo["ids"]) == len(pool.items[0].meta["reasoning"])
    step = agent_demo(pool.items[0])
    assert step["passages"][0][0] == pool.items[0].supporting_titles[0]
