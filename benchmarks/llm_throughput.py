"""LLM throughput on this machine: load time, prefill and decode tokens/s, peak RSS, cached-call latency.

    python benchmarks/llm_throughput.py --preset qwen2.5-coder-0.5b --out benchmarks/results/llm_qwen2.5-coder-0.5b.json
    python benchmarks/llm_throughput.py --preset smollm2-135m --backends hf,hf-4bit --out /tmp/x.json

Each backend runs in its own subprocess so peak RSS and load time are its own. Backends:
hf (transformers, the preset's dtype), hf-bf16, hf-4bit (bitsandbytes nf4 copy), llamacpp.
One-time preparation (assembling GGUF parts, the 4-bit safetensors copy) is timed separately from
loading. Prompt tokens/s is measured on a ~300-token few-shot prompt with one new token; decode
tokens/s is (new tokens - 1) / (time - that prompt's prefill time). A tiny few-shot triple-extraction
chat and a JSON prompt are answered too, so the record shows output quality next to speed.
`decode_cpu_cores_used` (CPU seconds / wall seconds while decoding) and the load average show how
much of the machine the run really had.
Numbers are from a shared machine: compare backends within one file, not across machines.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

BACKENDS = {
    "hf": {"backend": "hf"},
    "hf-bf16": {"backend": "hf", "dtype": "bfloat16"},
    "hf-4bit": {"backend": "hf", "quantization": "4bit"},
    "llamacpp": {"backend": "llamacpp"},
}

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

TRIPLE_SENTENCE = "Christopher Nolan directed Inception, which stars Leonardo DiCaprio."
# the quality probe puts the shots in user/assistant turns: in one user message (FEW_SHOT) the
# 0.5B model tends to repeat the examples instead of answering
TRIPLE_CHAT = [
    {"role": "system", "content": "You turn a sentence into knowledge-graph triples written as (head, relation, tail), one per line. Write only the triples."},
    {"role": "user", "content": "Marie Curie was born in Warsaw and won the Nobel Prize in Physics."},
    {"role": "assistant", "content": "(Marie Curie, born in, Warsaw)\n(Marie Curie, award received, Nobel Prize in Physics)"},
    {"role": "user", "content": "The Eiffel Tower is located in Paris, which is the capital of France."},
    {"role": "assistant", "content": "(Eiffel Tower, located in, Paris)\n(Paris, capital of, France)"},
    {"role": "user", "content": TRIPLE_SENTENCE},
]
EXPECTED = [("Inception", "Christopher Nolan"), ("Inception", "Leonardo DiCaprio")]
JSON_PROMPT = (
    'Return only a JSON object with a key "entities" listing the named entities in this question, no prose.\n'
    "Question: Which films did the director of Inception make with Leonardo DiCaprio?"
)
DECODE_PROMPT = "Count from 1 to 300, separated by commas. Do not stop early."
BATCH_PROMPTS = [
    "Describe a cat in two sentences.",
    "Explain what a knowledge graph is.",
    "Give three tips for writing clear code.",
    "Summarise the plot of Romeo and Juliet.",
]


def _rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def _cpu_s() -> float:
    """CPU seconds used by this process (all threads): divided by wall time, the cores it really got."""
    ru = resource.getrusage(resource.RUSAGE_SELF)
    return ru.ru_utime + ru.ru_stime


def _current_rss_mb() -> float:
    try:
        with open("/proc/self/statm") as fh:
            return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20
    except OSError:
        return float("nan")


def run_child(preset: str, name: str, decode_tokens: int) -> dict:
    """Measure one backend in this process (called in a subprocess)."""
    from kgrag_utils.llm import get_preset, load_llm

    opts = dict(BACKENDS[name])
    load_start = os.getloadavg()[0]
    prepare_s = _prepare_files(get_preset(preset), opts)
    rss_before = _current_rss_mb()

    t = time.perf_counter()
    llm = load_llm(preset, cache=False, **opts)
    load_s = time.perf_counter() - t
    rss_loaded = _current_rss_mb()

    llm.generate(["Say hello."], max_new_tokens=4)  # warm-up (kernels, allocator, llama.cpp graph)

    few_shot = FEW_SHOT.format(sentence="Ada Lovelace wrote the first published algorithm for Charles Babbage's Analytical Engine.")
    [pre] = llm.generate([few_shot], max_new_tokens=1)
    prefill_tps = pre.prompt_tokens / pre.seconds

    cpu0, wall0 = _cpu_s(), time.perf_counter()
    [dec] = llm.generate([DECODE_PROMPT], max_new_tokens=decode_tokens)
    decode_cpu_share = (_cpu_s() - cpu0) / (time.perf_counter() - wall0)
    dec_prefill_s = dec.prompt_tokens / prefill_tps
    decode_tps = (dec.completion_tokens - 1) / max(dec.seconds - dec_prefill_s, 1e-9)

    t = time.perf_counter()
    batch = llm.generate(BATCH_PROMPTS, max_new_tokens=32)
    batch_s = time.perf_counter() - t
    batch_tps = sum(r.completion_tokens for r in batch) / batch_s

    quality = _quality(llm)
    cached_ms = _cached_call_ms(llm)
    return {
        "backend": name,
        "backend_name": llm.backend_name,
        "model_id": llm.model_id,
        "quantization": llm.preset.quantization,
        "dtype": llm.preset.dtype,
        "prepare_s": round(prepare_s, 2),
        "load_s": round(load_s, 2),
        "prompt_tokens_per_s": round(prefill_tps, 1),
        "prefill_prompt_tokens": pre.prompt_tokens,
        "decode_tokens_per_s": round(decode_tps, 2),
        "decode_completion_tokens": dec.completion_tokens,
        "batch4_completion_tokens_per_s": round(batch_tps, 2),
        "batch_size": getattr(llm, "batch_size", 1),
        "cached_call_ms": round(cached_ms, 3),
        "rss_before_load_mb": round(rss_before, 1),
        "rss_after_load_mb": round(rss_loaded, 1),
        "peak_rss_mb": round(_rss_mb(), 1),
        "decode_cpu_cores_used": round(decode_cpu_share, 2),
        "loadavg_1min_start_end": [round(load_start, 2), round(os.getloadavg()[0], 2)],
        "quality": quality,
    }


def _prepare_files(spec, opts: dict) -> float:
    """Seconds to put the preset's model files in place (the GGUF assembled; for 4-bit, its safetensors copy)."""
    from kgrag_utils.llm.gguf_assets import assemble

    t = time.perf_counter()
    if spec.gguf is not None:
        assemble(spec.gguf)
    if opts.get("quantization") == "4bit" and spec.gguf is not None:
        from kgrag_utils.llm.hf_backend import ensure_safetensors_copy

        ensure_safetensors_copy(spec, assemble(spec.gguf))
    return time.perf_counter() - t


def _quality(llm) -> dict:
    """The replies to a triple-extraction chat and a JSON prompt, and what the project's parsers read from them."""
    from kgrag_utils.parsers import extract_json_list, parse_triples

    [tri] = llm.generate([TRIPLE_CHAT], max_new_tokens=64)
    triples = parse_triples(tri.text)
    found = sum(any(h in t_[0] and x in t_[2] or x in t_[0] and h in t_[2] for t_ in triples) for h, x in EXPECTED)
    [js] = llm.generate([JSON_PROMPT], max_new_tokens=48)
    return {
        "triple_prompt_output": tri.text,
        "triples_parsed": [list(t_) for t_ in triples],
        "expected_pairs_found": f"{found}/{len(EXPECTED)}",
        "json_prompt_output": js.text,
        "entities_parsed": extract_json_list(js.text, key="entities"),
    }


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


def _environment() -> dict:
    import importlib.metadata as md

    versions = {}
    for pkg in ("torch", "transformers", "bitsandbytes", "llama-cpp-python", "accelerate"):
        try:
            versions[pkg] = md.version(pkg)
        except md.PackageNotFoundError:
            versions[pkg] = None
    return {
        "python": platform.python_version(),
        "platform": platform.platform(),
        "cpu_count": os.cpu_count(),
        "processor": platform.processor(),
        "versions": versions,
        "note": "shared 2-core machine: numbers are indicative; compare backends within one file",
    }


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--preset", required=True)
    ap.add_argument("--out", required=True, help="JSON file to write")
    ap.add_argument("--backends", default="hf,hf-bf16,hf-4bit,llamacpp")
    ap.add_argument("--decode-tokens", type=int, default=64)
    ap.add_argument("--child", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")

    if args.child:
        print("BENCH_JSON " + json.dumps(run_child(args.preset, args.child, args.decode_tokens)))
        return 0

    names = [b.strip() for b in args.backends.split(",") if b.strip()]
    unknown = [b for b in names if b not in BACKENDS]
    if unknown:
        ap.error(f"unknown backend(s) {unknown}: use {list(BACKENDS)}")
    record = {
        "preset": args.preset,
        "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "environment": _environment(),
        "decode_tokens": args.decode_tokens,
        "results": [],
        "skipped": {},
    }
    for name in names:
        if name == "llamacpp":
            import importlib.util

            if importlib.util.find_spec("llama_cpp") is None:
                record["skipped"][name] = "llama-cpp-python not installed"
                continue
        print(f"[bench] {args.preset} / {name} ...", flush=True)
        proc = subprocess.run(
            [sys.executable, __file__, "--preset", args.preset, "--out", args.out, "--child", name,
             "--decode-tokens", str(args.decode_tokens)],
            capture_output=True, text=True,
        )
        line = next((l for l in proc.stdout.splitlines() if l.startswith("BENCH_JSON ")), None)
        if proc.returncode != 0 or line is None:
            tail = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or ["no output"]
            record["skipped"][name] = f"failed (exit {proc.returncode}): {tail[0][:300]}"
            print(f"[bench]   failed: {record['skipped'][name]}", flush=True)
            continue
        res = json.loads(line[len("BENCH_JSON "):])
        record["results"].append(res)
        print(
            f"[bench]   load {res['load_s']} s, prefill {res['prompt_tokens_per_s']} tok/s, decode "
            f"{res['decode_tokens_per_s']} tok/s, peak RSS {res['peak_rss_mb']} MB, cached call {res['cached_call_ms']} ms, "
            f"triples {res['quality']['expected_pairs_found']}",
            flush=True,
        )
    from kgrag_utils.records import write_result

    out = write_result(args.out, record, args)  # atomic, + provenance (command, arguments, commit, environment)
    print(f"[bench] wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
