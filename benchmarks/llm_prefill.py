"""How many prompt tokens llama.cpp must prefill per SimGRAG question, by the order the questions run in.

    python benchmarks/llm_prefill.py                       # MetaQA 1/2/3-hop, the seeded 200, the 1.5B's prompts
    python benchmarks/llm_prefill.py --hops 1hop --limit 20 --out /tmp/llm_prefill.json

Every prompt of a run as the method builds it for the 1.5B's defaults, gold patterns replayed (no model runs), in the
order the backend receives them, tokenised with the GGUF's chat template and tokenizer; counted is what one KV cache
reuses (the longest common prefix with the previous prompt): exact for that model of the cache, the same on any
machine. The sample's order against `Method.run_order` by batch size: docs/CPU.md#prefill.
"""

from __future__ import annotations

import argparse

from bench_common import write_rows

PRESET = "qwen2.5-coder-1.5b"


def recorded_calls(hop: str, limit: int, seed: int, batch_size: int, ordered: bool,
                   take: int | None = None) -> list[tuple[list[dict], object]]:
    """Every call of one SimGRAG run as (chat, GenerationConfig), in the order the LLM backend receives them: the
    prompts and schemas of the 1.5B's default decoding ("schema"), answered by the replayed gold patterns.
    `take`: only the first questions of the seeded sample of `limit`."""
    from kgrag_utils.datasets import load_dataset
    from kgrag_utils.llm.llamacpp_backend import LlamaCppLLM
    from kgrag_utils.methods.simgrag import SimGRAG, SimGRAGConfig
    from kgrag_utils.methods.simgrag.stages.replay import replay_gold_llm

    ds = load_dataset(f"metaqa-{hop}", "test", limit=limit, seed=seed)
    llm = replay_gold_llm(ds.items, form="json")
    llm.miss_order = LlamaCppLLM.miss_order  # the misses of one call reach the backend in llama.cpp's order
    calls: list[tuple[list[dict], object]] = []
    generate = llm._generate_batch

    def recording(batch, config):
        calls.extend((chat, config) for chat in batch)
        return generate(batch, config)

    llm._generate_batch = recording
    config = SimGRAGConfig(dataset=f"metaqa-{hop}", llm_preset=PRESET, llm_structured="schema", batch_size=batch_size)
    method = SimGRAG.prepare(config, ds, llm=llm, progress=False)
    if not ordered:
        method.run_order = lambda items: items
    method.run(ds.items[:take], progress=False)
    return calls


def tokenizer():
    """The 1.5B's tokenizer and chat template (the GGUF's vocabulary only: no weights are loaded)."""
    from llama_cpp import Llama
    from llama_cpp.llama_chat_format import Jinja2ChatFormatter

    from kgrag_utils.llm.gguf_assets import assemble
    from kgrag_utils.llm.presets import get_preset

    vocab = Llama(model_path=str(assemble(get_preset(PRESET).gguf)), vocab_only=True, verbose=False)
    eos = vocab.detokenize([vocab.token_eos()]).decode("utf-8", "ignore")
    fmt = Jinja2ChatFormatter(template=vocab.metadata["tokenizer.chat_template"], eos_token=eos, bos_token="")
    return lambda chat: vocab.tokenize(fmt(messages=chat).prompt.encode("utf-8"), add_bos=False, special=True)


def prefilled(prompts: list[list[int]]) -> int:
    """Tokens evaluated when each prompt reuses the longest common prefix with the one before it (one KV sequence;
    a prompt equal to the previous one still evaluates its last token)."""
    total, previous = 0, []
    for p in prompts:
        shared = next((i for i, (a, b) in enumerate(zip(p, previous)) if a != b), min(len(p), len(previous)))
        total += len(p) - min(shared, len(p) - 1)
        previous = p
    return total


def measure(hop: str, limit: int, seed: int, batches: list[int], tokens) -> list[dict]:
    rows = []
    for label, batch, ordered in [("sample order", 8, False)] + [("run_order", b, True) for b in batches + [limit]]:
        seq = [tokens(chat) for chat, _ in recorded_calls(hop, limit, seed, batch, ordered)]
        n_q = len(seq) / 2
        rows.append({"dataset": f"metaqa-{hop}", "order": label, "batch_size": batch, "prompts": len(seq),
                     "prompt_tokens_per_question": round(sum(map(len, seq)) / n_q, 1),
                     "prefill_tokens_per_question": round(prefilled(seq) / n_q, 1)})
    for r in rows:
        r["prefill_vs_sample_order"] = round(r["prefill_tokens_per_question"] / rows[0]["prefill_tokens_per_question"], 3)
    return rows


def main(argv: list[str] | None = None) -> int:
    from kgrag_utils.methods.simgrag import SimGRAGConfig

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--hops", default="1hop,2hop,3hop")
    ap.add_argument("--limit", type=int, default=200, help="the seeded test sample (the LLM runs' 200)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default="benchmarks/results/llm_prefill.json")
    args = ap.parse_args(argv)
    batches, tokens = sorted({8, SimGRAGConfig().batch_size}), tokenizer()
    rows = [r for h in args.hops.split(",") for r in measure(h, args.limit, args.seed, batches, tokens)]
    write_rows(args.out, {"model": PRESET, "cache_model": "one KV sequence, longest common prefix with the previous "
                          "prompt", "questions": args.limit, "seed": args.seed, "rows": rows}, args,
               "{dataset}: {order:>12}, batch {batch_size:>3}: prompt {prompt_tokens_per_question:7.1f} tokens/question,"
               " prefilled {prefill_tokens_per_question:7.1f} ({prefill_vs_sample_order:.2f}x)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
