"""Greedy decoding under a grammar that tests the model's own choice before filtering the vocabulary.

llama-cpp-python runs its grammar sampler over every token of the vocabulary at every step (about 150,000 for the
Qwen models: 26 ms a token on 2 cores, a fifth of the 1.5B's decoding, docs/CPU.md#grammar-first). llama.cpp's own
sampler (common/sampling.cpp) first tests only the token it would pick anyway. This sampler does the same for greedy
decoding, in three steps that each return the same token as the grammar-then-argmax chain:

1. the argmax of the logits, when the grammar accepts it;
2. else the best accepted token among the TOP highest logits, when its logit is above every token left out;
3. else the argmax over the whole vocabulary after the grammar (as the chain does).

Ties break towards the lower token id, as llama.cpp's greedy sampler does.
"""

from __future__ import annotations

import ctypes

import numpy as np

#: llama.cpp's `llama_token_data` (id, logit, p) as a numpy record, to pass arrays of candidates without copying
TOKEN_DATA = np.dtype([("id", "<i4"), ("logit", "<f4"), ("p", "<f4")], align=True)
#: candidates tested in step 2: a rejected argmax is usually a near-tie between spellings of the same text
TOP = 64


class GrammarFirstGreedy:
    """A llama-cpp-python sampler (`.sample(ctx, idx)`) for greedy decoding under one GBNF grammar."""

    def __init__(self, vocab, grammar: str, root: str, n_vocab: int):
        import llama_cpp

        self._lib = llama_cpp
        self.grammar = llama_cpp.llama_sampler_init_grammar(vocab, grammar.encode("utf-8"), root.encode("utf-8"))
        self.n_vocab = int(n_vocab)
        self._full: np.ndarray | None = None  # the whole vocabulary's candidates, made on the first step 3 only
        #: how often each step decided: the model's own token, the top candidates, the whole vocabulary
        self.steps = {"argmax": 0, "top": 0, "full": 0}

    def _allowed(self, candidates: np.ndarray) -> np.ndarray:
        """The grammar's verdict on candidate tokens (a TOKEN_DATA array, filtered in place)."""
        lib = self._lib
        arr = lib.llama_token_data_array(
            data=candidates.ctypes.data_as(ctypes.POINTER(lib.llama_token_data)), size=len(candidates), selected=-1,
            sorted=False,
        )
        lib.llama_sampler_apply(self.grammar, ctypes.byref(arr))
        return candidates["logit"] != -np.inf

    def choose(self, logits: np.ndarray) -> int:
        """The token greedy decoding under the grammar picks from these logits (the grammar's state is unchanged)."""
        best = int(np.argmax(logits))
        if self._allowed(np.array([(best, logits[best], 0.0)], dtype=TOKEN_DATA))[0]:
            self.steps["argmax"] += 1
            return best
        if self.n_vocab > TOP:
            top = np.argpartition(logits, -TOP)[-TOP:]
            top = top[np.lexsort((top, -logits[top]))]  # highest logit first, then the lower id
            candidates = np.zeros(TOP, dtype=TOKEN_DATA)
            candidates["id"], candidates["logit"] = top, logits[top]
            ok = np.flatnonzero(self._allowed(candidates))
            if ok.size and logits[top[ok[0]]] > logits[top].min():  # strictly above every token left out
                self.steps["top"] += 1
                return int(top[ok[0]])
        self.steps["full"] += 1
        if self._full is None:  # a sampler lives for one call: most calls never get here
            self._full = np.zeros(self.n_vocab, dtype=TOKEN_DATA)
            self._full["id"] = np.arange(self.n_vocab, dtype=np.int32)
        self._full["logit"] = logits
        self._allowed(self._full)
        return int(np.argmax(self._full["logit"]))

    def sample(self, ctx, idx: int = -1) -> int:
        """llama-cpp-python's sampler call: choose from the logits of position `idx`, then advance the grammar."""
        lib = self._lib
        pointer = lib.llama_get_logits_ith(ctx.ctx, idx)
        if not pointer:  # llama.cpp computed no logits at this position (its own chain fails here too)
            raise RuntimeError(f"llama.cpp has no logits at position {idx} to sample from")
        logits = np.ctypeslib.as_array(pointer, shape=(self.n_vocab,))
        token = self.choose(logits)
        lib.llama_sampler_accept(self.grammar, token)
        return token

    def close(self) -> None:
        grammar, self.grammar = getattr(self, "grammar", None), None
        if grammar is not None:
            self._lib.llama_sampler_free(grammar)

    __del__ = close


def applies(temp: float, repeat_penalty: float = 1.0, frequency_penalty: float = 0.0, presence_penalty: float = 0.0,
            logits_processor=None, grammar=None, **_) -> bool:
    """Whether llama-cpp-python's sampler chain for these arguments is exactly "grammar, then argmax"."""
    return (grammar is not None and temp == 0.0 and repeat_penalty == 1.0 and frequency_penalty == 0.0
            and presence_penalty == 0.0 and not logits_processor)


def llama_class():
    """llama-cpp-python's `Llama` with this sampler wherever its own chain would be grammar-then-argmax."""
    from llama_cpp import Llama

    class GrammarFirstLlama(Llama):
        grammar_first = True  # False: llama-cpp-python's own chain (kept to measure against)

        def _init_sampler(self, **kwargs):
            if self.grammar_first and applies(**kwargs):
                g = kwargs["grammar"]
                return GrammarFirstGreedy(self._model.vocab, g._grammar, g._root, self._n_vocab)
            return super()._init_sampler(**kwargs)

    return GrammarFirstLlama
