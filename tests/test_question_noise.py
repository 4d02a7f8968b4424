"""`question_noise`: the KG questions of a compact or SimGRAG run rewritten at run time (methods/questions.py), the
notebook parameter that replaced the paraphrase flags of the removed benchmark scripts (issue 44)."""

from __future__ import annotations

import re

import pytest

from kgrag_utils.errors import ConfigError
from kgrag_utils.llm import load_llm
from kgrag_utils.methods.compact import CompactConfig
from kgrag_utils.methods.questions import KGQuestionConfig
from kgrag_utils.methods.simgrag import SimGRAGConfig
from kgrag_utils.records import run_key


@pytest.mark.parametrize("config_class", [CompactConfig, SimGRAGConfig])
def test_rule_noise_rewrites_the_loaded_questions_and_keeps_what_they_ask(config_class):
    plain = config_class(dataset="sample-movies-1hop", limit=12).load_dataset()
    noisy = config_class(dataset="sample-movies-1hop", limit=12, question_noise="rules").load_dataset()
    again = config_class(dataset="sample-movies-1hop", limit=12, question_noise="rules").load_dataset()
    assert [q.qid for q in noisy.items] == [q.qid for q in plain.items]
    assert [(q.answers, q.chain, q.topic_entities) for q in noisy.items] == [
        (q.answers, q.chain, q.topic_entities) for q in plain.items]
    assert [q.question for q in noisy.items] == [q.question for q in again.items]  # seeded: the same rewrite
    changed = [(p, n) for p, n in zip(plain.items, noisy.items) if p.question != n.question]
    assert changed and all(n.meta["original_question"] == p.question for p, n in changed)
    for p, n in zip(plain.items, noisy.items):  # the topic mention is never touched
        assert re.findall(r"\[[^\]]*\]", p.question) == re.findall(r"\[[^\]]*\]", n.question)
    assert noisy.info["question_noise"] == {"kind": "rule", "noise": ["synonym", "drop", "misspell"], "seed": 0,
                                            "asked": 12, "kept": 12}
    assert "question_noise" not in plain.info
    one = config_class(dataset="sample-movies-1hop", limit=12, question_noise="drop").load_dataset()
    assert one.info["question_noise"]["noise"] == ["drop"]
    assert all(len(n.question.split()) < len(p.question.split()) for p, n in zip(plain.items, one.items)
               if n.meta["paraphrase"]["edits"])


def test_llm_paraphrases_keep_the_questions_whose_mention_survives(monkeypatch):
    def reply(prompt: str) -> str:
        question = prompt.split("\n\n")[-1]
        mention = re.findall(r"\[[^\]]*\]", question)
        return f"Tell me: {question.replace(mention[0], '').strip()} {mention[0]}?" if "directed" in question else "no"

    monkeypatch.setattr(KGQuestionConfig, "load_llm",
                        lambda self, **kw: load_llm("fake", responses=reply, cache=False))
    plain = CompactConfig(dataset="sample-movies-1hop", limit=20).load_dataset()
    ds = CompactConfig(dataset="sample-movies-1hop", limit=20, question_noise="llm").load_dataset()
    asked = sum("directed" in q.question for q in plain.items)
    assert 0 < asked < 20 and len(ds.items) == asked
    assert all(q.question.startswith("Tell me:") and q.meta["paraphrase"]["kind"] == "llm" for q in ds.items)
    assert ds.info["question_noise"] == {"kind": "llm", "model": "qwen2.5-coder-0.5b", "asked": 20, "kept": asked,
                                         "rejected": 20 - asked}
    monkeypatch.setattr(KGQuestionConfig, "load_llm", lambda self, **kw: load_llm("fake", responses=lambda p: "no",
                                                                                   cache=False))
    with pytest.raises(ConfigError, match="kept none of its 20 paraphrases"):
        CompactConfig(dataset="sample-movies-1hop", limit=20, question_noise="llm").load_dataset()


def test_a_bad_value_and_a_dataset_without_kg_questions_are_refused_in_one_line():
    with pytest.raises(ConfigError, match="question_noise='typo' is not valid"):
        CompactConfig(question_noise="typo")
    with pytest.raises(ConfigError, match="rewrites KG questions; 'sample-kinship' is a kinship dataset"):
        CompactConfig(dataset="sample-kinship", limit=3, question_noise="drop").load_dataset()


def test_the_questions_as_written_keep_the_run_keys_of_runs_recorded_before_the_parameter():
    params = CompactConfig(dataset="sample-movies-1hop").to_dict()
    before = {k: v for k, v in params.items() if k != "question_noise"}
    assert params["question_noise"] == "" and run_key(params) == run_key(before)
    assert run_key({**params, "question_noise": "rules"}) != run_key(before)
