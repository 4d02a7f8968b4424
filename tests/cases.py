"""One smoke case per registered method (the pattern of pykeen's tests/cases.py): a small subclass of
`MethodCase` says which sample dataset and which no-LLM config the method runs on, so that the protocol
tests (tests/test_protocol.py) run every method the same way, with no `if` per method.

A fifth method adds one case here (a test checks every registered method has one).
"""

from __future__ import annotations

from typing import Any, ClassVar

from kgrag_utils.datasets import load_dataset
from kgrag_utils.embeddings import Embedder
from kgrag_utils.methods import get_method
from stand_ins import HashBOW


def stand_in_embedder() -> Embedder:
    return Embedder(model=HashBOW(), model_id="hash-bow-protocol", cache=False)


class MethodCase:
    """A registered method on its sample data, without an LLM (its no-LLM variants), with a stand-in embedder."""

    name: ClassVar[str]
    dataset: ClassVar[str]
    split: ClassVar[str] = "test"
    limit: ClassVar[int] = 6
    config: ClassVar[dict[str, Any]] = {}

    def load(self):
        return load_dataset(self.dataset, split=self.split, limit=self.limit)

    def prepared(self):
        """(the prepared method, its dataset)."""
        spec = get_method(self.name)
        ds = self.load()
        return spec.method_class.prepare(spec.config_class(**self.config), ds, embedder=stand_in_embedder()), ds


class SimGRAGCase(MethodCase):
    name = "simgrag"
    dataset = "sample-movies-2hop"
    config = {"pattern_source": "oracle", "reader": False, "batch_size": 3}


class CompactCase(MethodCase):
    name = "compact"
    dataset = "sample-movies-2hop"
    config = {"reader": False, "context": "compact", "batch_size": 3}


class VectorRerankCase(MethodCase):
    name = "vector_rerank"
    dataset = "sample-passages"
    limit = 4
    config = {"variants": ["naive", "expand"], "batch_size": 2}


class KGPCase(MethodCase):
    name = "kgp"
    dataset = "sample-passages"
    split = "all"
    limit = 4
    config = {"traversal": "tfidf", "reader": False, "set_passages": 40}


#: method name -> its case
CASES: dict[str, MethodCase] = {case.name: case() for case in MethodCase.__subclasses__()}
