"""LLM throughput on this machine: load time, prefill and decode tokens/s, peak RSS, cached-call latency.

    python benchmarks/llm_throughput.py --preset qwen2.5-coder-0.5b --out benchmarks/results/llm_qwen2.5-coder-0.5b.json
    python benchmarks/llm_throughput.py --preset smollm2-135m --backends hf,hf-4bit --out /tmp/x.json

Each backend (BACKENDS) runs in its own process, so peak RSS and load time are its own; one-time preparation (GGUF
assembly, the 4-bit safetensors copy) is timed apart from loading. Prefill tokens/s: a ~300-token few-shot prompt
with one new token; decode tokens/s: (new tokens - 1) / (time - that prompt's prefill time). A triple-extraction
chat and a JSON prompt are answered too, so output quality stands next to speed (docs/MODELS.md).
`decode_cpu_cores_used` (CPU seconds / wall seconds while decoding) and the load average show how much of the
machine the run had: compare backends within one file, not across machines.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import resource
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

from bench_common import json_child, peak_rss_mb, write

BACKENDS = {"hf": {"backend": "hf"}, "hf-bf16": {"backend": "hf", "dtype": "bfloat16"},
            "hf-4bit": {"backend": "hf", "quantization": "4bit"}, "llamacpp": {"backend": "llamacpp"}}

FEW_SHOT = """You turn a sentence into knowledge-graph triples written as (head, relation, tail), one per line.

Sentence: Marie Curie was born in Warsaw and won the Nobel Prize in Physics.
Triples:
(Marie Curie, born in, Warsaw)
(Marie Curie, award received, Nobel Prize in Physics)

Sentence: The Eiffel Tower is located in Paris, which is the capital of France.
Triples:
(Eiffel Tower, located in, Paris)
(Paris, capital of, France)

Sentence: Alan Turing studied at King's College, Cambridge, and worked at Bletchley Park during the war.
Triples:
(Alan Turing, educated at, King's College, Cambridge)
(Alan Turing, worked at, Bletchley Park)

Sentence: {sentence}
Triples:
"""
# the quality probe puts the shots in user/assistant turns: in one user message (FEW_SHOT) the
# 0.5B model tends to repeat the examples instead of answering
TRIPLE_CHAT = [
    {"role": "system", "content": "You turn a sentence into knowledge-graph triples written as (head, relation, tail), "
                                  "one per line. Write only the triples."},
    {"role": "user", "content": "Marie Curie was born in Warsaw and won the Nobel Prize in Physics."},
    {"role": "assistant", "content": "(Marie Curie, born in, Warsaw)\n(Marie Curie, award received, Nobel Prize in Physics)"},
    {"role": "user", "content": "The Eiffel Tower is located in Paris, which is the capital of France."},
    {"role": "assistant", "content": "(Eiffel Tower, located in, Paris)\n(Paris, capital of, France)"},
    {"role": "user", "content": "Christopher Nolan directed Inception, which stars Leonardo DiCaprio."},
]
EXPECTED = [("Inception", "Christopher Nolan"), ("Inception", "Leonardo DiCaprio")]
JSON_PROMPT = ('Return only a JSON object with a key "entities" listing the named entities in this question, no prose.\n'
               "Question: Which films did the director of Inception make with Leonardo DiCaprio?")
DECODE_PROMPT = "Count from 1 to 300, separated by commas. Do not stop early."
BATCH_PROMPTS = ["Describe a cat in two sentences.", "Explain what a knowledge graph is.",
                 "Give three tips for writing clear code.", "Summarise the plot of Romeo and Juliet."]


def _cpu_s() -> float:
    """CPU seconds of this process (all threads): divided by wall time, the cores it really got."""
    ru = resource.getrusage(resource.RUSAGE_SELF)
    return ru.ru_utime + ru.ru_stime


def _current_rss_mb() -> float:
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def run_child(preset: str, name: str, decode_tokens: int) -> dict:
    """Measure one backend in this process (a child of main)."""
    from kgrag_utils.llm import get_preset, load_llm

    opts, load_start = dict(BACKENDS[name]), os.getloadavg()[0]
    prepare_s, rss_before = _prepare_files(get_preset(preset), opts), _current_rss_mb()
    t = time.perf_counter()
    llm = load_llm(preset, cache=False, **opts)
    load_s, rss_loaded = time.perf_counter() - t, _current_rss_mb()
    llm.generate(["Say hello."], max_new_tokens=4)  # warm-up (kernels, allocator, llama.cpp graph)
    sentence = "Ada Lovelace wrote the first published algorithm for Charles Babbage's Analytical Engine."
    [pre] = llm.generate([FEW_SHOT.format(sentence=sentence)], max_new_tokens=1)
    prefill_tps = pre.prompt_tokens / pre.seconds
    cpu0, wall0 = _cpu_s(), time.perf_counter()
    [dec] = llm.generate([DECODE_PROMPT], max_new_tokens=decode_tokens)
    decode_cpu_share = (_cpu_s() - cpu0) / (time.perf_counter() - wall0)
    decode_tps = (dec.completion_tokens - 1) / max(dec.seconds - dec.prompt_tokens / prefill_tps, 1e-9)
    t = time.perf_counter()
    batch = llm.generate(BATCH_PROMPTS, max_new_tokens=32)
    batch_tps = sum(r.completion_tokens for r in batch) / (time.perf_counter() - t)
    quality, cached_ms = _quality(llm), _cached_call_ms(llm)
    return {"backend": name, "backend_name": llm.backend_name, "model_id": llm.model_id,
            "quantization": llm.preset.quantization, "dtype": llm.preset.dtype, "prepare_s": round(prepare_s, 2),
            "load_s": round(load_s, 2), "prompt_tokens_per_s": round(prefill_tps, 1),
            "prefill_prompt_tokens": pre.prompt_tokens, "decode_tokens_per_s": round(decode_tps, 2),
            "decode_completion_tokens": dec.completion_tokens, "batch4_completion_tokens_per_s": round(batch_tps, 2),
            "batch_size": getattr(llm, "batch_size", 1), "cached_call_ms": round(cached_ms, 3),
            "rss_before_load_mb": round(rss_before, 1), "rss_after_load_mb": round(rss_loaded, 1),
            "peak_rss_mb": round(peak_rss_mb(), 1), "decode_cpu_cores_used": round(decode_cpu_share, 2),
            "loadavg_1min_start_end": [round(load_start, 2), round(os.getloadavg()[0], 2)], "quality": quality}


def _prepare_files(spec, opts: dict) -> float:
    """Seconds to put the preset's model files in place (the GGUF assembled; for 4-bit, its safetensors copy)."""
    from kgrag_utils.llm.gguf_assets import assemble

    t = time.perf_counter()
    if spec.gguf is not None:
        gguf = assemble(spec.gguf)
        if opts.get("quantization") == "4bit":
            from kgrag_utils.llm.hf_backend import ensure_safetensors_copy  # torch: only where it is used

            ensure_safetensors_copy(spec, gguf)
    return time.perf_counter() - t


def _quality(llm) -> dict:
    """The replies to a triple-extraction chat and a JSON prompt, and what the project's parsers read from them."""
    from kgrag_utils.parsers import extract_json_list, parse_triples

    [tri] = llm.generate([TRIPLE_CHAT], max_new_tokens=64)
    triples = parse_triples(tri.text)
    found = sum(any(h in t[0] and x in t[2] or x in t[0] and h in t[2] for t in triples) for h, x in EXPECTED)
    [js] = llm.generate([JSON_PROMPT], max_new_tokens=48)
    return {"triple_prompt_output": tri.text, "triples_parsed": [list(t) for t in triples],
            "expected_pairs_found": f"{found}/{len(EXPECTED)}", "json_prompt_output": js.text,
            "entities_parsed": extract_json_list(js.text, key="entities")}


def _cached_call_ms(llm, n: int = 50) -> float:
    """Milliseconds of a call answered from the response cache (a temporary one), over `n` calls."""
    from kgrag_utils.llm import ResponseCache

    with tempfile.TemporaryDirectory() as tmp:
        llm.cache = ResponseCache(Path(tmp) / "bench.sqlite")
        llm.generate(["Name a colour."], max_new_tokens=8)
        t = time.perf_counter()
        for _ in range(n):
            r = llm.chat("Name a colour.", max_new_tokens=8)
        cached_ms = (time.perf_counter() - t) / n * 1000
        assert r.cached
        llm.cache.close()
        llm.cache = None
    return cached_ms


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--preset", required=True)
    ap.add_argument("--out", required=True, help="JSON file to write")
    ap.add_argument("--backends", default=",".join(BACKENDS))
    ap.add_argument("--decode-tokens", type=int, default=64)
    ap.add_argument("--child", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    if args.child:
        print(json.dumps(run_child(args.preset, args.child, args.decode_tokens)))
        return 0
    names = [b.strip() for b in args.backends.split(",") if b.strip()]
    if unknown := [b for b in names if b not in BACKENDS]:
        ap.error(f"unknown backend(s) {unknown}: use {list(BACKENDS)}")
    record = {"preset": args.preset, "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
              "decode_tokens": args.decode_tokens, "results": [], "skipped": {}}
    for name in names:
        if name == "llamacpp" and importlib.util.find_spec("llama_cpp") is None:
            record["skipped"][name] = "llama-cpp-python not installed"
            continue
        print(f"[bench] {args.preset} / {name} ...", flush=True)
        try:
            res = json_child([sys.executable, __file__, "--preset", args.preset, "--out", args.out, "--child", name,
                              "--decode-tokens", str(args.decode_tokens)])
        except RuntimeError as exc:
            record["skipped"][name] = f"failed ({str(exc)[-300:]})"
            print(f"[bench]   {record['skipped'][name]}", flush=True)
            continue
        record["results"].append(res)
        print(f"[bench]   load {res['load_s']} s, prefill {res['prompt_tokens_per_s']} tok/s, decode "
              f"{res['decode_tokens_per_s']} tok/s, peak RSS {res['peak_rss_mb']} MB, cached call "
              f"{res['cached_call_ms']} ms, triples {res['quality']['expected_pairs_found']}", flush=True)
    write(args.out, record, args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
