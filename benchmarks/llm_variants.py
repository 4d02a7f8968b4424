"""Samplers, weight layouts and speculative decoding for the 1.5B on SimGRAG's own prompts: seconds, equal replies.

    python benchmarks/llm_variants.py                                   # MetaQA 1-hop, the first 24 calls
    python benchmarks/llm_variants.py --calls 8 --variants q4_k_m,q4_0 --out /tmp/llm_variants.json
    python benchmarks/llm_variants.py --hop 2hop --variants q4_k_m,grammar-first --threads 2 --out /tmp/gf.json
    python benchmarks/llm_variants.py --whole 50 --threads 2 --out /tmp/whole.json   # before issue 50 against now

A real run's calls (`llm_prefill.recorded_calls`) go through the project's llama.cpp call with no response cache,
every call on every variant (VARIANTS; described in docs/CPU.md#weights-and-drafts) before the next call, so a
change of load falls on all; a reply is "equal" when its text is the first variant's. Prefill seconds are
llama.cpp's own (`llama_perf_context`). Every variant but "grammar-first" (today's default) decodes schemas with
llama-cpp-python's own sampler chain, the default before grammar_first.py.
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

import numpy as np
from bench_common import write_rows

PRESET, DRAFT_PRESET = "qwen2.5-coder-1.5b", "qwen2.5-coder-0.5b"
VARIANTS = ("q4_k_m", "grammar-first", "q4_0", "lookup", "lookup-last-logits", "draft-0.5b")


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
    """A smaller Llama continuing the tokens greedily (its KV cache keeps the longest common prefix between calls)."""

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

    path = assemble(get_preset(PRESET).gguf)
    llm = LlamaCppLLM(get_preset(PRESET), None, model_path=requantized(path) if name == "q4_0" else path, n_ctx=2048,
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
                        draft_model=draft, logits_all=cls is Llama,  # llama-cpp-python sizes its logits copy by this
                        verbose=False)
    if hasattr(llm.llama, "grammar_first"):
        llm.llama.grammar_first = name == "grammar-first"
    return llm


def measure(calls, variants: list[str], threads: int, draft_tokens: int) -> dict:
    llms = {v: load_variant(v, threads, draft_tokens) for v in variants}
    rows = {v: dict.fromkeys(("seconds", "prefill_seconds", "prefill_tokens", "completion_tokens", "equal"), 0)
            for v in variants}
    load_before = os.getloadavg()[0]
    for i, (chat, config) in enumerate(calls):
        texts = {}
        for v, llm in llms.items():
            start = time.perf_counter()
            gen = llm._generate_batch([chat], config)[0]
            rows[v]["seconds"] += time.perf_counter() - start
            rows[v]["prefill_seconds"] += gen.prefill_seconds or 0.0
            rows[v]["prefill_tokens"] += gen.prefill_tokens or 0
            rows[v]["completion_tokens"] += gen.completion_tokens
            texts[v] = gen.text
        for v in variants:
            rows[v]["equal"] += texts[v] == texts[variants[0]]
        print(f"call {i + 1}/{len(calls)}: " + ", ".join(f"{v} {r['seconds']:.1f} s" for v, r in rows.items()), flush=True)
    base = rows[variants[0]]["seconds"]
    for r in rows.values():
        r.update(seconds=round(r["seconds"], 2), prefill_seconds=round(r["prefill_seconds"], 2),
                 decode_seconds=round(r["seconds"] - r["prefill_seconds"], 2), vs_first=round(r["seconds"] / base, 3),
                 equal_share=round(r["equal"] / len(calls), 3))
    return {"load_average_before": round(load_before, 2), "load_average_after": round(os.getloadavg()[0], 2),
            "rows": [{"variant": v, **r} for v, r in rows.items()]}


#: (batch size, run order, grammar-first) of the LLM stage before issue 50's work and now (None: SimGRAG's default)
SETUPS = {"before": (8, False, False), "now": (None, True, True)}


def whole_runs(hop: str, limit: int, take: int, seed: int, threads: int) -> dict:
    """The first `take` questions of the seeded `limit` run through as before and as now, one setup after the other
    with the KV cache emptied between: seconds per question, and each call's reply against the first setup's."""
    from llm_prefill import recorded_calls

    from kgrag_utils.methods.simgrag import SimGRAGConfig

    llm, rows, first = load_variant("q4_k_m", threads, 0), [], None
    load_before = os.getloadavg()[0]
    for name, (batch, ordered, grammar_first) in SETUPS.items():
        batch = batch or SimGRAGConfig().batch_size
        calls = recorded_calls(hop, limit, seed, batch, ordered, take)
        llm.llama.grammar_first = grammar_first
        llm.llama.reset()
        row = dict.fromkeys(("seconds", "prefill_seconds", "prefill_tokens", "completion_tokens"), 0)
        texts = {}
        for i, (chat, config) in enumerate(calls):
            start = time.perf_counter()
            gen = llm._generate_batch([chat], config)[0]
            row["seconds"] += time.perf_counter() - start
            row["prefill_seconds"] += gen.prefill_seconds or 0.0
            row["prefill_tokens"] += gen.prefill_tokens or 0
            row["completion_tokens"] += gen.completion_tokens
            texts[repr(chat)] = gen.text
            print(f"{name}: call {i + 1}/{len(calls)}, {row['seconds']:.1f} s", flush=True)
        first = first or texts
        equal = sum(t == first.get(k) for k, t in texts.items())
        rows.append({"variant": name, "batch_size": batch, "run_order": ordered,
                     "grammar_first": grammar_first, "calls": len(calls), **{k: round(v, 2) for k, v in row.items()},
                     "seconds_per_question": round(row["seconds"] / take, 2), "equal": equal,
                     "equal_share": round(equal / len(calls), 3)})
    for r in rows:
        r["vs_first"] = round(r["seconds"] / rows[0]["seconds"], 3)
    return {"questions": take, "load_average_before": round(load_before, 2),
            "load_average_after": round(os.getloadavg()[0], 2), "rows": rows}


def main(argv: list[str] | None = None) -> int:
    from llm_prefill import recorded_calls

    from kgrag_utils.methods.simgrag import SimGRAGConfig

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--hop", default="1hop")
    ap.add_argument("--limit", type=int, default=200, help="the seeded test sample whose run order the calls follow")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--calls", type=int, default=24, help="the first N calls of the run")
    ap.add_argument("--variants", default=",".join(VARIANTS), help=f"from {', '.join(VARIANTS)}; the first is the base")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--draft-tokens", type=int, default=6)
    ap.add_argument("--whole", type=int, default=0, help="N: the whole run of the first N questions, before and now "
                    "(SETUPS), instead of the variants")
    ap.add_argument("--out", default="benchmarks/results/llm_variants.json")
    args = ap.parse_args(argv)
    variants = args.variants.split(",")
    if unknown := sorted(set(variants) - set(VARIANTS)):
        ap.error(f"unknown variant(s) {unknown}: use {', '.join(VARIANTS)}")
    if args.whole:
        result = {"model": PRESET, "dataset": f"metaqa-{args.hop}", "threads": args.threads,
                  **whole_runs(args.hop, args.limit, args.whole, args.seed, args.threads)}
        write_rows(args.out, result, args, "{variant:>7}: {seconds:7.1f} s ({vs_first:.2f}x), {seconds_per_question:5.2f}"
                   " s/question, prefill {prefill_seconds:6.1f} s, replies equal to the first {equal}/{calls}")
        return 0
    calls = recorded_calls(args.hop, args.limit, args.seed, SimGRAGConfig().batch_size, True)[: args.calls]
    result = {"model": PRESET, "dataset": f"metaqa-{args.hop}", "calls": len(calls), "threads": args.threads,
              "draft_tokens": args.draft_tokens, **measure(calls, variants, args.threads, args.draft_tokens)}
    write_rows(args.out, result, args, "{variant:>18}: {seconds:7.1f} s ({vs_first:.2f}x), prefill {prefill_seconds:6.1f}"
               " s, decode {decode_seconds:6.1f} s, equal replies " + "{equal}/" + str(len(calls)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
