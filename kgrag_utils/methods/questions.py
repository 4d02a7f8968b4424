"""KG questions rewritten at run time (`question_noise`): the same questions in other words, for methods whose
relation knowledge or prompts were fit on templated wording (compact relation selection, SimGRAG).

The rewrites are `kgrag_utils.datasets.paraphrase`'s: rule noise (a synonym swapped, a function word dropped, a
word misspelt, or all three: "rules"), deterministic per (question id, seed) and never touching the bracketed topic
mention; or the run's own LLM paraphrasing each question ("llm": greedy, cached; a reply that loses the mention or
repeats the question is rejected, and the run evaluates the kept questions). Ids, topics, answers and gold chains
stay; the original text is in each item's `meta["original_question"]`, and `ds.info["question_noise"]` says how the
questions were made. Nothing rewritten is stored in the repository.
"""

from __future__ import annotations

from typing import Literal

from ..errors import ConfigError
from .base import MethodConfig

__all__ = ["KGQuestionConfig", "QUESTION_NOISE"]

QUESTION_NOISE = ("", "synonym", "drop", "misspell", "rules", "llm")


class KGQuestionConfig(MethodConfig):
    """A method config whose evaluated KG questions may be rewritten before the method sees them."""

    question_noise: Literal["", "synonym", "drop", "misspell", "rules", "llm"] = ""  # KG questions rewritten at run time: "" as written; "synonym", "drop", "misspell" (one rule noise), "rules" (all three), "llm" (the run's LLM paraphrases them; rejected ones are left out)

    def _rewrite_questions(self, ds) -> None:
        if not self.question_noise:
            return
        if ds.kind != "kgqa":
            raise ConfigError(f"question_noise={self.question_noise!r} rewrites KG questions; {ds.name!r} is a "
                              f"{ds.kind} dataset: use question_noise=''.")
        from ..datasets import paraphrase

        asked = len(ds.items)
        if self.question_noise == "llm":
            ds.items, counts = paraphrase.llm_paraphrases(ds.items, self.load_llm(), progress=False)
            if not ds.items:
                raise ConfigError(f"question_noise='llm': {self.llm_preset} kept none of its {asked} paraphrases (each "
                                  "lost the [mention] or repeated the question): use a real LLM preset, or rule noise.")
            ds.info["question_noise"] = {"kind": "llm", "model": self.llm_preset, **counts}
            return
        kinds = paraphrase.NOISE_KINDS if self.question_noise == "rules" else (self.question_noise,)
        ds.items = paraphrase.noisy_questions(ds.items, seed=self.seed, kinds=kinds)
        ds.info["question_noise"] = {"kind": "rule", "noise": list(kinds), "seed": self.seed, "asked": asked,
                                     "kept": asked}
