"""Weight layout and speculative decoding for the 1.5B on SimGRAG's own prompts: seconds, and equal replies.

    python benchmarks/llm_variants.py                                   # MetaQA 1-hop, the first 24 calls
    python benchmarks/llm_variants.py --calls 8 --variants q4_k_m,q4_0 --out /tmp/llm_variants.json

The calls are a real SimGRAG run's (benchmarks/llm_prefill.py `recorded_calls`: the 1.5B's default settings,
schema decoding, the run order, gold patterns replayed for the answer prompts), sent through the project's
llama.cpp call (`LlamaCppLLM._generate_batch`: greedy, the stage's grammar) with no response cache. Variants:

* `q4_k_m`: the packaged file (today's default);
* `q4_0`: the same weights requantized to Q4_0 once (`llama_model_quantize`, into cache/models/), which
  llama.cpp repacks online for its CPU kernels (`REPACK = 1` in its system info). Requantized from Q4_K_M, not
  from the original weights: its replies may differ from an official Q4_0 file's; its speed may not;
* `lookup`: Q4_K_M with prompt-lookup speculative decoding (llama-cpp-python's `LlamaPromptLookupDecoding`:
  drafts are copied from the prompt, where entity names come from);
* `draft-0.5b`: Q4_K_M with the packaged Qwen2.5-Coder-0.5B drafting `--draft-tokens` tokens greedily (same
  tokenizer). Speculative variants make llama-cpp-python compute every position's logits (`logits_all`), the
  prompt's included;
* `lookup-last-logits`: `lookup`, with logits computed only for the last token of a long batch (the prompt) and
  for every token of a short one (a draft being verified): what speculative decoding needs.

Every call runs on every variant before the next call, so a change in the machine's load falls on all of them.
A reply is "equal" when its text equals the `q4_k_m` reply to the same call. Seconds are wall seconds around
the call; prefill seconds are llama.cpp's own (`llama_perf_context`).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

PRESET, DRAFT_PRESET = "qwen2.5-coder-1.5b", "qwen2.5-coder-0.5b"
VARIANTS = ("q4_k_m", "q4_0", "lookup", "lookup-last-logits", "draft-0.5b")


def requantized(source: Path, kind: str = "q4_0") -> Path:
    """The packaged GGUF requantized to `kind` once, next to it in cache/models/ (written atomically)."""
    import llama_cpp

    dest = source.with_name(f"{source.stem}.requantized-{kind}.gguf")
    if not dest.is_file():
        params = llama_cpp.llama_model_quantize_default_params()
        params.ftype = getattr(llama_cpp, f"LLAMA_FTYPE_MOSTLY_{kind.upper()}")
        params.allow_requantize = True
        tmp = dest.with_name(dest.name + f".{os.getpid()}.tmp")
        if llama_cpp.llama_model_quantize(str(source).encode(), str(tmp).encode(), params) != 0:
            raise RuntimeError(f"llama_model_quantize to {kind} failed on {source}")
        os.replace(tmp, dest)
    return dest


class SmallModelDraft:
    """A llama-cpp-python draft model: a smaller Llama continuing the tokens greedily (its KV cache keeps the
    longest common prefix between calls, as `Llama.generate` does)."""

    def __init__(self, llama, tokens: int):
        self.llama, self.tokens = llama, tokens

    def __call__(self, input_ids, /, **kwargs):
        out: list[int] = []
        for token in self.llama.generate(list(map(int, input_ids)), top_k=1, temp=0.0, repeat_penalty=1.0, reset=True):
            out.append(int(token))
            if len(out) >= self.tokens or token == self.llama.token_eos():
                break
        return np.array(out, dtype=np.intc)


def last_logits_llama(draft_tokens: int):
    """A Llama computing logits only where speculative decoding samples: the last prompt token, and every token of
    a batch of at most `draft_tokens` + 1 (the token sampled and its draft)."""
    from llama_cpp import Llama

    class LastLogitsLlama(Llama):
        def eval(self, tokens):
            self._ctx.kv_cache_seq_rm(-1, self.n_tokens, -1)
            every = len(tokens) <= draft_tokens + 1
            for i in range(0, len(tokens), self.n_batch):
                batch = tokens[i: i + self.n_batch]
                self._batch.set_batch(batch=batch, n_past=self.n_tokens, logits_all=every)
                self._ctx.decode(self._batch)
                self.input_ids[self.n_tokens: self.n_tokens + len(batch)] = batch
                self.n_tokens += len(batch)
                self._requires_eval = False

    return LastLogitsLlama


def load_variant(name: str, threads: int, draft_tokens: int):
    """The project's llama.cpp LLM for one variant (speculative ones get a Llama built with their draft model)."""
    from llama_cpp import Llama
    from llama_cpp.llama_speculative import LlamaPromptLookupDecoding

    from kgrag_utils.llm.gguf_assets import assemble
    from kgrag_utils.llm.llamacpp_backend import LlamaCppLLM
    from kgrag_utils.llm.presets import get_preset

    preset = get_preset(PRESET)
    path = assemble(preset.gguf)
    llm = LlamaCppLLM(preset, None, model_path=requantized(path) if name == "q4_0" else path, n_ctx=2048,
                      n_threads=threads)
    if name in ("lookup", "lookup-last-logits", "draft-0.5b"):
        if name.startswith("lookup"):
            draft = LlamaPromptLookupDecoding(num_pred_tokens=draft_tokens)
        else:
            small = Llama(model_path=str(assemble(get_preset(DRAFT_PRESET).gguf)), n_ctx=2048, n_threads=threads,
                          n_threads_batch=threads, verbose=False)
            draft = SmallModelDraft(small, draft_tokens)
        llm.llama.close()
        cls = last_logits_llama(draft_tokens) if name == "lookup-last-logits" else Llama
        llm.llama = cls(model_path=str(path), n_ctx=2048, n_threads=threads, n_threads_batch=threads, seed=0,
                          draft_model=draft, logits_all=cls is Llama,  # llama-cpp-python sizes its logits copy by this flag
                          verbose=False)
    return llm


def measure(calls, variants: list[str], threads: int, draft_tokens: int) -> dict:
    llms = {v: load_variant(v, threads, draft_tokens) for v in variants}
    rows = {v: {"seconds": 0.0, "prefill_seconds": 0.0, "prefill_tokens": 0, "completion_tokens": 0, "equal": 0}
            for v in variants}
    load_before = os.getloadavg()[0]
    for i, (chat, config) in enumerate(calls):
        texts = {}
        for v, llm in llms.items():
            start = time.perf_counter()
            gen = llm._generate_batch([chat], config)[0]
            row = rows[v]
            row["seconds"] += time.perf_counter() - start
            row["prefill_seconds"] += gen.prefill_seconds or 0.0
            row["prefill_tokens"] += gen.prefill_tokens or 0
            row["completion_tokens"] += gen.completion_tokens
            texts[v] = gen.text
        for v in variants:
            rows[v]["equal"] += texts[v] == texts[variants[0]]
        print(f"call {i + 1}/{len(calls)}: " + ", ".join(f"{v} {r['seconds']:.1f} s" for v, r in rows.items()), flush=True)
    base = rows[variants[0]]["seconds"]
    for r in rows.values():
        r.update({k: round(r[k], 2) for k in ("seconds", "prefill_seconds")},
                 decode_seconds=round(r["seconds"] - r["prefill_seconds"], 2), vs_first=round(r["seconds"] / base, 3),
                 equal_share=round(r["equal"] / len(calls), 3))
    return {"load_average_before": round(load_before, 2), "load_average_after": round(os.getloadavg()[0], 2),
            "rows": [{"variant": v, **r} for v, r in rows.items()]}


def main(argv: list[str] | None = None) -> int:
    from llm_prefill import recorded_calls

    from kgrag_utils.methods.simgrag import SimGRAGConfig
    from kgrag_utils.records import write_result

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--hop", default="1hop")
    ap.add_argument("--limit", type=int, default=200, help="the seeded test sample whose run order the calls follow")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--calls", type=int, default=24, help="the first N calls of the run")
    ap.add_argument("--variants", default=",".join(VARIANTS), help=f"from {', '.join(VARIANTS)}; the first is the base")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--draft-tokens", type=int, default=6)
    ap.add_argument("--out", default="benchmarks/results/llm_variants.json")
    args = ap.parse_args(argv)
    variants = args.variants.split(",")
    if unknown := sorted(set(variants) - set(VARIANTS)):
        ap.error(f"unknown variant(s) {unknown}: use {', '.join(VARIANTS)}")
    calls = recorded_calls(args.hop, args.limit, args.seed, SimGRAGConfig().batch_size, True)[: args.calls]
    result = {"model": PRESET, "dataset": f"metaqa-{args.hop}", "calls": len(calls), "threads": args.threads,
              "draft_tokens": args.draft_tokens, **measure(calls, variants, args.threads, args.draft_tokens)}
    for r in result["rows"]:
        print(f"{r['variant']:>11}: {r['seconds']:7.1f} s ({r['vs_first']:.2f}x), prefill {r['prefill_seconds']:6.1f} s, "
              f"decode {r['decode_seconds']:6.1f} s, equal replies {r['equal']}/{len(calls)}")
    print("wrote", write_result(args.out, result, args))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
