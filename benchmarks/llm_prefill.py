"""How many prompt tokens llama.cpp must prefill per SimGRAG question, by the order the questions run in.

    python benchmarks/llm_prefill.py                       # MetaQA 1/2/3-hop, the seeded 200, the 1.5B's prompts
    python benchmarks/llm_prefill.py --hops 1hop --limit 20 --out /tmp/llm_prefill.json

llama.cpp (llama-cpp-python) keeps the KV cache of the previous call and evaluates only the part of the next
prompt after their longest common token prefix. A SimGRAG question makes two calls (pattern, answer) whose prompts
share the instruction and the fixed shots with every other question, and their nearest demonstrations with the
questions that chose the same ones. This script builds every prompt of a run exactly as the method does (the
1.5B's default settings: nearest demonstrations, schema decoding), with the replayed gold patterns instead of an
LLM (`replay_gold_llm`: no model runs, so the answer prompts hold the gold pattern's evidence, not the 1.5B's),
in the order the backend receives them, renders them with the GGUF's own chat template, tokenizes them with its
tokenizer, and counts what a single KV cache reuses. Compared: the sample's order with the former batch of 8
questions, against `Method.run_order` (questions sorted by their chosen demonstrations) with batches of 8 and
of the current default. The count is exact for that model of the cache and does not depend on the machine; the
seconds it saves are `prefill tokens / prefill rate` (about 100 tokens/s for the 1.5B on 2 idle cores,
docs/MODELS.md). A real run reports llama.cpp's own count (`tokens.prefill_tokens` in run.json).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

PRESET = "qwen2.5-coder-1.5b"


def recorded_prompts(hop: str, limit: int, seed: int, batch_size: int, ordered: bool) -> list[list[dict]]:
    """Every chat of one SimGRAG run, in the order the LLM backend receives them."""
    return [chat for chat, _ in recorded_calls(hop, limit, seed, batch_size, ordered)]


def recorded_calls(hop: str, limit: int, seed: int, batch_size: int, ordered: bool) -> list[tuple[list[dict], object]]:
    """Every call of one SimGRAG run as (chat, GenerationConfig), in the order the LLM backend receives them."""
    from kgrag_utils.datasets import load_dataset
    from kgrag_utils.methods.simgrag import SimGRAG, SimGRAGConfig
    from kgrag_utils.methods.simgrag.stages.replay import replay_gold_llm

    ds = load_dataset(f"metaqa-{hop}", "test", limit=limit, seed=seed)
    from kgrag_utils.llm.llamacpp_backend import LlamaCppLLM

    llm = replay_gold_llm(ds.items)
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
    method.run(ds.items, progress=False)
    return calls


def tokenizer():
    """The 1.5B's tokenizer and chat template (the GGUF's vocabulary only: no weights are loaded)."""
    from llama_cpp import Llama
    from llama_cpp.llama_chat_format import Jinja2ChatFormatter

    from kgrag_utils.llm.gguf_assets import assemble
    from kgrag_utils.llm.presets import get_preset

    vocab = Llama(model_path=str(assemble(get_preset(PRESET).gguf)), vocab_only=True, verbose=False)
    meta = vocab.metadata
    eos = vocab.detokenize([vocab.token_eos()]).decode("utf-8", "ignore")
    fmt = Jinja2ChatFormatter(template=meta["tokenizer.chat_template"], eos_token=eos, bos_token="")

    def tokens(chat: list[dict]) -> list[int]:
        return vocab.tokenize(fmt(messages=chat).prompt.encode("utf-8"), add_bos=False, special=True)

    return tokens


def prefilled(prompts: list[list[int]]) -> int:
    """Tokens evaluated when each prompt reuses the longest common prefix with the one before it (llama.cpp's KV
    cache of one sequence; a prompt equal to the previous one still evaluates its last token)."""
    total, previous = 0, []
    for p in prompts:
        shared = 0
        for a, b in zip(p, previous):
            if a != b:
                break
            shared += 1
        total += len(p) - min(shared, len(p) - 1)
        previous = p
    return total


def measure(hop: str, limit: int, seed: int, batches: list[int], tokens) -> dict:
    settings = [("sample order", 8, False)] + [("run_order", b, True) for b in batches] + [("run_order", limit, True)]
    rows = []
    for label, batch, ordered in settings:
        seq = [tokens(c) for c in recorded_prompts(hop, limit, seed, batch, ordered)]
        n_q = len(seq) / 2
        rows.append({"order": label, "batch_size": batch, "prompts": len(seq),
                     "prompt_tokens_per_question": round(sum(map(len, seq)) / n_q, 1),
                     "prefill_tokens_per_question": round(prefilled(seq) / n_q, 1)})
    base = rows[0]["prefill_tokens_per_question"]
    for r in rows:
        r["prefill_vs_sample_order"] = round(r["prefill_tokens_per_question"] / base, 3)
    return [{"dataset": f"metaqa-{hop}", **r} for r in rows]


def main(argv: list[str] | None = None) -> int:
    from kgrag_utils.methods.simgrag import SimGRAGConfig
    from kgrag_utils.records import write_result

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--hops", default="1hop,2hop,3hop")
    ap.add_argument("--limit", type=int, default=200, help="the seeded test sample (the LLM runs' 200)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default="benchmarks/results/llm_prefill.json")
    args = ap.parse_args(argv)
    batches = sorted({8, SimGRAGConfig().batch_size})
    tokens = tokenizer()
    result = {"model": PRESET, "cache_model": "one KV sequence, longest common prefix with the previous prompt",
              "questions": args.limit, "seed": args.seed,
              "rows": [r for h in args.hops.split(",") for r in measure(h, args.limit, args.seed, batches, tokens)]}
    for r in result["rows"]:
        print(f"{r['dataset']}: {r['order']:>12}, batch {r['batch_size']:>3}: prompt {r['prompt_tokens_per_question']:7.1f}"
              f" tokens/question, prefilled {r['prefill_tokens_per_question']:7.1f} ({r['prefill_vs_sample_order']:.2f}x)")
    print("wrote", write_result(args.out, result, args))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
