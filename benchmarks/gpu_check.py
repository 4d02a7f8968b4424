"""The GPU check: execute every CUDA code path once and measure an 8B-shaped model, in one JSON.

    python benchmarks/gpu_check.py                 # on the GPU machine -> benchmarks/results/gpu_check.json
    python benchmarks/gpu_check.py --dry-run       # here, on the CPU, tiny shapes -> benchmarks/out/gpu_check_dry_run.json
    python benchmarks/gpu_check.py --parts method,throughput --budget-s 240   # rerun some parts only

Parts (each in its own subprocess, so a crash or a CUDA error in one is recorded and the others run;
each writes its results as it goes, so a part stopped at its time limit keeps what it measured):

1. ``tests``: the CUDA tests (``pytest -m cuda tests/test_cuda.py``): 4-bit load of a tiny random
   model and of its saved 4-bit copy, batched left-padded generation equal to one-at-a-time greedy
   generation, a static KV cache, the response cache, embeddings on the device.
2. ``method``: SimGRAG (``01_simgrag`` on ``sample-movies-2hop``) end to end on the device with a tiny
   random 4-bit LLM and a tiny random embedder, through the batch runner when papermill and
   ipykernel are importable, else through the method's ``run``. It must finish with every
   unparseable reply counted as a failed question. Also measured here: how often batched and
   one-at-a-time greedy replies of the 4-bit model agree (bf16 kernels differ by batch shape, so
   this is a measurement, not a test).
3. ``throughput``: a model of Llama-3.1-8B's shape (32 layers, hidden 4096, intermediate 14336,
   32 heads, 8 KV heads, vocab 128,256) with random weights, saved and loaded through the project's
   ``hf`` backend in bf16 and nf4 4-bit: load seconds, peak GPU memory, prefill and decode tokens/s
   at batch 1, 8 and 32 with 800-token prompts. Beside each decode figure: the memory-bandwidth
   bound (``--bandwidth-tbs``, H200: 4.8 TB/s, divided by the bytes of weights read per decode step,
   counted from the loaded model's actual parameter and quantization-state storage; the input
   embedding is a row gather and is not counted), and the same bound with the KV cache reads
   added. Then variants of backend settings, as the time budget allows: a static KV cache (eager,
   and compiled: transformers compiles the forward pass on CUDA for a static cache) and eager
   attention instead of SDPA.

The random models emit no end-of-sequence (their eos and pad logits are zeroed), so every decode
row runs exactly the requested number of tokens. ``--dry-run`` runs every part on the CPU with a
tiny throughput shape; its JSON says ``"dry_run": true`` and its figures are NOT GPU figures (it
cannot be written to benchmarks/results/gpu_check.json). A global ``--budget-s`` (default 420 s)
bounds the whole check; what did not fit is recorded as skipped, never silently left out.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import traceback
import xml.etree.ElementTree as ET
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from kgrag_utils.records import atomic_write_json, write_result  # noqa: E402

PARTS = ("tests", "method", "throughput")
REAL_OUT = "benchmarks/results/gpu_check.json"
DRY_OUT = "benchmarks/out/gpu_check_dry_run.json"
DEFAULT_BUDGET_S = 420  # the whole check, so it stays under 8 minutes with the offline wheel install
#: the longest a part may take on the GPU (seconds); the throughput part takes what is left. A dry run's
#: parts share its whole budget (a busy CPU machine is slow, and a dry run measures nothing).
PART_CAPS = {"tests": 150, "method": 150, "throughput": 10_000}
H200_BANDWIDTH_TBS = 4.8  # HBM3e, NVIDIA's H200 SXM specification
H200_BF16_TFLOPS = 989.0  # dense bf16 tensor-core peak, NVIDIA's H200 SXM specification

# the throughput part: real (8B shape, 800-token prompts) and the dry run's tiny stand-in
REAL_THROUGHPUT = dict(shape="LLAMA_31_8B", prompt_tokens=800, decode_tokens=64, batches=(1, 8, 32))
DRY_THROUGHPUT = dict(shape="DRY_RUN_TINY", prompt_tokens=48, decode_tokens=8, batches=(1, 8, 32))
DRY_RUN_TINY = dict(vocab_size=2048, hidden_size=128, intermediate_size=256, num_hidden_layers=2,
                    num_attention_heads=4, num_key_value_heads=2, head_dim=32, max_position_embeddings=1024,
                    tie_word_embeddings=False)
METHOD = dict(notebook="01_simgrag", dataset="sample-movies-2hop", limit=8, batch_size=8)
DRY_METHOD = dict(METHOD, limit=2, batch_size=2)  # a char-level tiny model reads ~3k-token prompts: slow on a CPU
PACKAGES = ("torch", "transformers", "accelerate", "bitsandbytes", "sentence-transformers", "tokenizers",
            "safetensors", "huggingface-hub", "numpy", "faiss-cpu", "faiss-gpu-cu12", "papermill", "nbformat",
            "ipykernel", "triton", "pytest")


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def _short(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0][:400] if text else ''}"


# ============================================================================ machine / versions
def machine_info() -> dict:
    info: dict = {"python": platform.python_version(), "platform": platform.platform(),
                  "cpu_count": os.cpu_count(), "hostname_hash": None}
    try:
        pages = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
        info["ram_gib"] = round(pages / 2**30, 1)
    except (ValueError, OSError):
        pass
    try:
        import torch

        info["torch_cuda"] = torch.version.cuda
        info["cuda_available"] = bool(torch.cuda.is_available())
        if torch.cuda.is_available():
            p = torch.cuda.get_device_properties(0)
            info["gpu"] = {"name": p.name, "memory_gib": round(p.total_memory / 2**30, 1),
                           "capability": f"{p.major}.{p.minor}", "multiprocessors": p.multi_processor_count,
                           "count": torch.cuda.device_count()}
    except Exception as exc:  # a broken torch is itself a finding
        info["torch_error"] = _short(exc)
    smi = shutil.which("nvidia-smi")
    if smi:
        try:
            out = subprocess.run([smi, "--query-gpu=name,memory.total,driver_version,power.limit,clocks.max.memory",
                                  "--format=csv,noheader"], capture_output=True, text=True, timeout=20)
            info["nvidia_smi"] = out.stdout.strip() or out.stderr.strip()
        except (OSError, subprocess.SubprocessError) as exc:
            info["nvidia_smi"] = _short(exc)
    info["c_compiler"] = shutil.which("gcc") or shutil.which("cc")  # torch.compile's Triton launcher needs one
    return info


def versions() -> dict:
    from importlib import metadata

    out = {}
    for name in PACKAGES:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = None
    try:
        out["kgrag_commit"] = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"],
                                             capture_output=True, text=True, timeout=10).stdout.strip() or None
    except (OSError, subprocess.SubprocessError):
        out["kgrag_commit"] = None
    return out


# ============================================================================ helpers for children
class Partial:
    """A part's results, written to disk after every step (the parent reads them even after a kill)."""

    def __init__(self, path: Path):
        self.path = path
        self.data: dict = {"complete": False, "steps": {}}
        self.save()

    def step(self, name: str, value) -> None:
        self.data["steps"][name] = value
        self.save()

    def set(self, key: str, value) -> None:
        self.data[key] = value
        self.save()

    def save(self) -> None:
        atomic_write_json(self.path, self.data)


def _device(dry: bool) -> str:
    import torch

    if dry:
        return "cpu"
    if not torch.cuda.is_available():
        raise RuntimeError("no CUDA device visible to torch")
    return "cuda"


def _sync(device: str) -> None:
    if device == "cuda":
        import torch

        torch.cuda.synchronize()


def _free(device: str) -> None:
    gc.collect()
    if device == "cuda":
        import torch

        torch.cuda.empty_cache()


def _memory(device: str) -> dict:
    if device == "cuda":
        import torch

        return {"gpu_allocated_gib": round(torch.cuda.memory_allocated() / 2**30, 3),
                "gpu_peak_allocated_gib": round(torch.cuda.max_memory_allocated() / 2**30, 3),
                "gpu_peak_reserved_gib": round(torch.cuda.max_memory_reserved() / 2**30, 3)}
    return {"cpu_peak_rss_gib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20, 3)}


def _reset_peak(device: str) -> None:
    if device == "cuda":
        import torch

        torch.cuda.reset_peak_memory_stats()


# ============================================================================ part: method
def part_method(dry: bool, work: Path, partial: Partial, deadline: float, method_via: str = "auto") -> None:
    import importlib.util

    from kgrag_utils import random_models as rm
    from kgrag_utils.llm import load_llm

    device = _device(dry)
    partial.set("device", device)
    t = time.perf_counter()
    tiny = rm.save_random_llama(work / "tiny-llm", rm.TINY_LLAMA, rm.char_tokenizer(), dtype="bfloat16", seed=1)
    emb = rm.save_tiny_bert_embedder(work / "tiny-embedder", seed=1)
    partial.step("build_tiny_models_s", round(time.perf_counter() - t, 2))

    # the tiny model quantized on load by the backend, then saved as a 4-bit folder for the notebook
    t = time.perf_counter()
    llm = load_llm(str(tiny), quantization="4bit", device=device, cache=False)
    import bitsandbytes as bnb

    partial.step("tiny_4bit", {"load_s": round(time.perf_counter() - t, 2),
                               "linear4bit_modules": sum(isinstance(m, bnb.nn.Linear4bit) for m in llm.model.modules()),
                               "device": str(next(llm.model.parameters()).device)})
    n_prompts, n_new = (4, 8) if dry else (16, 32)
    prompts = [f"Question {i}: which films did the director of film number {i * 7} also write?" + " context" * (i % 5)
               for i in range(n_prompts)]
    llm.batch_size = n_prompts
    batched = llm.generate(prompts, max_new_tokens=n_new)
    llm.batch_size = 1
    single = llm.generate(prompts, max_new_tokens=n_new)
    same = [b.text == s.text for b, s in zip(batched, single)]
    first_diff = [next((i for i, (x, y) in enumerate(zip(b.text, s.text)) if x != y), min(len(b.text), len(s.text)))
                  for b, s, ok in zip(batched, single, same) if not ok]
    partial.step("four_bit_batched_vs_single_agreement", {
        "what": "greedy replies of the tiny random 4-bit model, one left-padded batch vs one at a time; "
                "a measurement (bf16 kernels differ with the batch shape), the fp32 equality is a test",
        "n_prompts": n_prompts, "max_new_tokens": n_new, "identical": sum(same),
        "first_differing_character": first_diff})
    q4 = work / "tiny-llm-4bit"
    llm.model.save_pretrained(str(q4))
    llm.tokenizer.save_pretrained(str(q4))
    llm.close()
    del llm
    _free(device)

    runner_ok = all(importlib.util.find_spec(m) is not None for m in ("papermill", "nbformat", "ipykernel"))
    via = {"runner": "runner", "run": "method.run"}.get(method_via) or ("runner" if runner_ok else "method.run")
    partial.set("via", via)
    spec = DRY_METHOD if dry else METHOD
    # LLM patterns (random replies: every pattern unparseable) and gold patterns (retrieval and the answer
    # stage run on the device, the answers are random): both must finish with the failures counted
    for source, suffix in (("llm", ""), ("oracle", "_oracle_patterns")):
        params = {"dataset": spec["dataset"], "limit": spec["limit"], "batch_size": spec["batch_size"],
                  "pattern_source": source}
        _method_run(via, spec, params, str(q4), str(emb), device, deadline, partial, suffix)


def _method_run(via, spec, params, q4, emb, device, deadline, partial, suffix) -> None:
    t = time.perf_counter()
    if via == "runner":
        from kgrag_utils.runner import run_notebook

        outcome = run_notebook(spec["notebook"], {**params, "llm_preset": q4, "llm_backend": "hf", "embedder": emb},
                               grid="gpu_check", timeout=max(30, int(deadline - time.time()) - 10))
        partial.step("run" + suffix, {"status": outcome.status, "error": outcome.error,
                                      "seconds": round(outcome.seconds, 1), "run_name": outcome.run_name})
        run_name = outcome.run_name
        if outcome.status != "ok":
            log = Path(outcome.log).read_text(errors="replace")[-3000:] if outcome.log else ""
            partial.step("run_log_tail" + suffix, log)
            # tell a notebook-only problem from a method problem: the same run without papermill
            t = time.perf_counter()
            try:
                direct = _run_simgrag_directly(q4, emb, params, device)
                partial.step("run_direct" + suffix, {"status": "ok", "seconds": round(time.perf_counter() - t, 1),
                                                     "records": _check_records(direct, spec["limit"])})
            except Exception as exc:
                partial.step("run_direct" + suffix, {"status": "failed", "error": _short(exc),
                                                     "traceback": traceback.format_exc()[-2000:]})
    else:
        run_name = _run_simgrag_directly(q4, emb, params, device)
        partial.step("run" + suffix, {"status": "ok", "seconds": round(time.perf_counter() - t, 1), "run_name": run_name})
    try:
        partial.step("records" + suffix, _check_records(run_name, spec["limit"]))
    except Exception as exc:  # no run record at all
        partial.step("records" + suffix, {"ok": False, "error": _short(exc)})


def _run_simgrag_directly(llm_folder: str, embedder: str, params: dict, device: str) -> str:
    """The notebook's evaluation cells without figures (when papermill or ipykernel is missing)."""
    from kgrag_utils.llm import load_llm
    from kgrag_utils.methods.simgrag import SimGRAG, SimGRAGConfig, summarize
    from kgrag_utils.records import RunRecorder

    config = SimGRAGConfig.from_params(params)
    data = config.load_dataset()
    recorder = RunRecorder("simgrag", {**config.to_dict(), "llm_preset": llm_folder, "embedder": embedder,
                                       "via": "gpu_check"})
    llm = load_llm(llm_folder, backend="hf", device=device)
    # the method protocol (docs/MIGRATION.md): prepare(config, dataset) embeds and indexes the KG, run returns
    # every item's record
    method = SimGRAG.prepare(config, data, llm=llm, embedder=embedder, progress=False)
    records = method.run(data.items, recorder=recorder, progress=False)
    summary = summarize(records)
    recorder.finish(summary=summary, timings=summary["timings"], tokens={**summary["tokens"], **llm.stats})
    llm.close()
    return recorder.run_dir.name


def _check_records(run_name: str, expected: int) -> dict:
    """Every question has a record; every unparseable reply is a failed question scored 0."""
    from kgrag_utils import settings
    from kgrag_utils.records import EXAMPLES_FILE, _read_jsonl, read_run

    rec = read_run(settings.results_dir() / run_name)
    path = settings.results_dir() / run_name / EXAMPLES_FILE
    examples = list(_read_jsonl(path)) if path.exists() else []
    bad_pattern = [e for e in examples if not e.get("pattern_ok")]
    bad_answer = [e for e in examples if e.get("pattern_ok") and e.get("answer_raw") is not None and not e.get("answers")]
    violations = [e["id"] for e in bad_pattern + bad_answer
                  if not e.get("failed") or e.get("hits@1") not in (0, 0.0)]
    summary = rec.get("summary") or {}
    llm_env = rec.get("environment") or {}
    return {
        "status": rec.get("status"), "n_records": len(examples), "expected": expected,
        "unparseable_patterns": len(bad_pattern), "unparseable_answers": len(bad_answer),
        "answers_generated": sum(e.get("answer_raw") is not None for e in examples),
        "failed": sum(bool(e.get("failed")) for e in examples),
        "failures_by_stage": {k: sum(e.get("failure") == k for e in examples) for k in ("pattern", "retrieval", "generation")},
        "unparseable_not_counted_as_failure": violations,
        "pattern_parse_rate": summary.get("pattern_parse_rate"),
        "hits@1": (summary.get("all") or {}).get("hits@1"),
        "llm_tokens": {k: v for k, v in (rec.get("tokens") or {}).items() if k in ("prompt_tokens", "completion_tokens", "calls")},
        "device_in_record": llm_env.get("device"), "gpu_in_record": llm_env.get("gpu"),
        "sample_raw_replies": [str(e.get("pattern_raw") or e.get("answer_raw"))[:60] for e in examples[:3]],
        "ok": rec.get("status") == "ok" and len(examples) == expected and not violations,
    }


# ============================================================================ part: throughput
def weight_bytes(model) -> dict:
    """Bytes of the loaded model's storage: all parameters (4-bit packed as stored) plus bitsandbytes'
    quantization state (absmax, nested absmax, code books); the input embedding is listed apart."""
    seen, total, qstate, four_bit = set(), 0, 0, 0

    def tensor_bytes(t) -> int:
        return t.numel() * t.element_size()

    def state_bytes(qs) -> int:
        if qs is None:
            return 0
        n = sum(tensor_bytes(getattr(qs, a)) for a in ("absmax", "code", "offset")
                if getattr(qs, a, None) is not None and hasattr(getattr(qs, a), "numel"))
        return n + state_bytes(getattr(qs, "state2", None))

    for _, p in model.named_parameters():
        if p.data_ptr() in seen:
            continue
        seen.add(p.data_ptr())
        total += tensor_bytes(p)
        qs = getattr(p, "quant_state", None)
        if qs is not None:
            four_bit += tensor_bytes(p)
            qstate += state_bytes(qs)
    emb = model.get_input_embeddings().weight
    tied = any(p.data_ptr() == emb.data_ptr() for p in model.get_output_embeddings().parameters())
    emb_bytes = tensor_bytes(emb)
    return {"parameter_bytes": total, "quant_state_bytes": qstate, "packed_4bit_bytes": four_bit,
            "input_embedding_bytes": emb_bytes, "embedding_tied": tied,
            "lm_head_bytes": sum(tensor_bytes(p) for p in model.get_output_embeddings().parameters()),
            "read_per_decode_step_bytes": total + qstate - (0 if tied else emb_bytes)}


def kv_bytes_per_token(config, dtype_bytes: int = 2) -> int:
    head_dim = getattr(config, "head_dim", None) or config.hidden_size // config.num_attention_heads
    return 2 * config.num_hidden_layers * config.num_key_value_heads * head_dim * dtype_bytes


def _bounds(weights: dict, config, batch: int, prompt: int, decode: int, bw_tbs: float) -> dict:
    kv = kv_bytes_per_token(config) * batch * (prompt + decode / 2)  # mean context during decoding
    w = weights["read_per_decode_step_bytes"]
    return {"bandwidth_bound_tokens_per_s": round(batch * bw_tbs * 1e12 / w, 1),
            "bandwidth_bound_with_kv_tokens_per_s": round(batch * bw_tbs * 1e12 / (w + kv), 1),
            "kv_bytes_read_per_step": int(kv)}


def _prefill_flops_per_token(config, prompt: int, matmul_params: int) -> float:
    head_dim = getattr(config, "head_dim", None) or config.hidden_size // config.num_attention_heads
    attn = 2 * 2 * config.num_hidden_layers * config.num_attention_heads * head_dim * prompt / 2  # causal QK^T + AV
    return 2 * matmul_params + attn


def _measure(llm, prompts: list[str], decode: int, device: str, reps_prefill: int = 2, reps_decode: int = 2) -> dict:
    """Prefill = a generate with one new token; decode = (generate with 1 + decode tokens) - prefill."""
    llm.batch_size = len(prompts)
    t = time.perf_counter()
    llm.generate(prompts, max_new_tokens=1 + decode)  # warm-up with the measured shapes (kernels, compile)
    _sync(device)
    warm = time.perf_counter() - t
    pre = []
    for _ in range(reps_prefill):
        _sync(device)
        t = time.perf_counter()
        out = llm.generate(prompts, max_new_tokens=1)
        _sync(device)
        pre.append(time.perf_counter() - t)
    dec, completions = [], []
    for _ in range(reps_decode):
        _sync(device)
        t = time.perf_counter()
        res = llm.generate(prompts, max_new_tokens=1 + decode)
        _sync(device)
        dec.append(time.perf_counter() - t)
        completions = [r.completion_tokens for r in res]
    prompt_tokens = sum(r.prompt_tokens for r in out)
    prefill_s, total_s = min(pre), min(dec)
    decoded = sum(c - 1 for c in completions)
    decode_s = total_s - prefill_s
    run = {"batch": len(prompts), "prompt_tokens_per_row": out[0].prompt_tokens, "warmup_s": round(warm, 3),
           "prefill_s": round(prefill_s, 4), "prefill_tokens_per_s": round(prompt_tokens / prefill_s, 1),
           "generate_s": round(total_s, 4), "decode_steps": decode, "completion_tokens_per_row": sorted(set(completions)),
           "decode_tokens_per_s": None, "decode_ms_per_step": None}
    if decode_s > 0.05 * total_s:
        run["decode_tokens_per_s"] = round(decoded / decode_s, 1)
        run["decode_ms_per_step"] = round(decode_s / decode * 1000, 2)
    else:  # timing noise larger than the decode time (only seen on a busy CPU): no figure rather than a wrong one
        run["decode_note"] = "not measurable: generate time within noise of the prefill time"
    return run


def part_throughput(dry: bool, work: Path, partial: Partial, deadline: float, bw_tbs: float) -> None:
    from kgrag_utils import random_models as rm
    from kgrag_utils.llm import load_llm

    device = _device(dry)
    spec = DRY_THROUGHPUT if dry else REAL_THROUGHPUT
    shape = DRY_RUN_TINY if dry else rm.LLAMA_31_8B
    L, N, batches = spec["prompt_tokens"], spec["decode_tokens"], spec["batches"]
    partial.set("conditions", {"device": device, "shape_name": spec["shape"], "shape": shape, "prompt_tokens": L,
                               "decode_tokens": N, "batches": list(batches), "bandwidth_tbs_assumed": bw_tbs,
                               "bf16_tflops_assumed": H200_BF16_TFLOPS, "weights": "random (normal, std 0.02); "
                               "eos and pad output rows zeroed so no row stops early",
                               "prompts": "distinct random words of an exact-vocabulary word tokenizer, no padding",
                               "timing": "min of 2 repetitions after one warm-up at the same shapes"})
    vocab = shape["vocab_size"]
    tok = rm.word_tokenizer(vocab)
    t = time.perf_counter()
    folder = rm.save_random_llama(work / "throughput-model", shape, tok, dtype="bfloat16",
                                  device=device, silence=(rm.EOS_ID, rm.PAD_ID))
    ckpt = sum(f.stat().st_size for f in folder.glob("*.safetensors"))
    partial.step("build_and_save", {"seconds": round(time.perf_counter() - t, 1), "checkpoint_bytes": ckpt,
                                    "folder_on": str(work)})
    _free(device)
    per_quant_s: list[float] = []

    def remaining() -> float:
        return deadline - time.time()

    for quant in ("nf4", "bf16"):
        if per_quant_s and remaining() < per_quant_s[-1] * 1.1:
            partial.step(quant, {"skipped": f"time budget: {remaining():.0f} s left, the previous quantization took "
                                            f"{per_quant_s[-1]:.0f} s"})
            continue
        q0 = time.time()
        try:
            _one_quantization(quant, folder, device, shape, vocab, L, N, batches, bw_tbs, partial, remaining,
                              reserve=(per_quant_s[-1] * 1.1 if per_quant_s else 0.0), dry=dry)
        except Exception as exc:  # e.g. bitsandbytes missing or failing on this GPU: bf16 is still measured
            entry = partial.data["steps"].get(quant) or {}
            entry.update({"error": _short(exc), "traceback": traceback.format_exc()[-2000:]})
            partial.step(quant, entry)
            _free(device)
        per_quant_s.append((partial.data["steps"].get(quant) or {}).get("measure_s") or time.time() - q0)


def _one_quantization(quant, folder, device, shape, vocab, L, N, batches, bw_tbs, partial, remaining, reserve, dry):
    """Load the saved model in one quantization, measure every batch size, then the variants."""
    from kgrag_utils import random_models as rm
    from kgrag_utils.llm import load_llm

    q0 = time.time()

    _reset_peak(device)
    t = time.perf_counter()
    opts = {"quantization": "4bit"} if quant == "nf4" else {"dtype": "bfloat16"}
    llm = load_llm(str(folder), cache=False, device=device, **opts)
    _sync(device)
    entry: dict = {"load_s": round(time.perf_counter() - t, 2), "after_load": _memory(device)}
    import importlib.util

    if importlib.util.find_spec("bitsandbytes"):
        import bitsandbytes as bnb

        entry["linear4bit_modules"] = sum(isinstance(m, bnb.nn.Linear4bit) for m in llm.model.modules())
    entry["lm_head"] = type(llm.model.get_output_embeddings()).__name__
    entry["attn_implementation"] = getattr(llm.model.config, "_attn_implementation", None)
    wb = weight_bytes(llm.model)
    entry["weights"] = wb
    matmul_params = rm_param_count(shape) - shape["hidden_size"] * vocab  # every matmul incl. lm_head, not the gather
    entry["runs"] = []
    partial.step(quant, entry)
    for b in batches:
        if remaining() < 15:
            entry["runs"].append({"batch": b, "skipped": "time budget"})
            continue
        prompts = [rm.word_prompt(L, vocab, seed=1000 * b + i) for i in range(b)]
        try:
            _reset_peak(device)
            run = _measure(llm, prompts, N, device)
            run.update(_bounds(wb, llm.model.config, b, L, N, bw_tbs))
            run["decode_fraction_of_bound"] = _sig(run["decode_tokens_per_s"], run["bandwidth_bound_tokens_per_s"])
            flops = _prefill_flops_per_token(llm.model.config, L, matmul_params)
            run["prefill_compute_bound_tokens_per_s"] = round(H200_BF16_TFLOPS * 1e12 / flops, 1)
            run.update(_memory(device))
        except Exception as exc:
            run = {"batch": b, "error": _short(exc), "traceback": traceback.format_exc()[-1500:]}
            _free(device)
        entry["runs"].append(run)
        partial.step(quant, entry)
    entry["measure_s"] = round(time.time() - q0, 1)
    entry["variants"] = _variants(llm, quant, folder, device, prompts_for=lambda b: [
        rm.word_prompt(L, vocab, seed=1000 * b + i) for i in range(b)], N=N, L=L, wb=wb, bw_tbs=bw_tbs,
        remaining=remaining, reserve=(max(reserve, time.time() - q0) * 1.1 if quant == "nf4" else 0.0),
        save=lambda: partial.step(quant, entry), dry=dry)
    partial.step(quant, entry)
    llm.close()
    del llm
    _free(device)


def _sig(measured, bound):
    return None if measured is None else float(f"{measured / bound:.3g}")


def rm_param_count(shape: dict) -> int:
    """Parameters of the dense model of `shape` (the nf4 model stores its matmul weights packed)."""
    h, i, layers, v = shape["hidden_size"], shape["intermediate_size"], shape["num_hidden_layers"], shape["vocab_size"]
    hd = shape.get("head_dim") or h // shape["num_attention_heads"]
    q, kv = shape["num_attention_heads"] * hd, shape["num_key_value_heads"] * hd
    per_layer = h * q + 2 * h * kv + q * h + 3 * h * i
    return layers * per_layer + 2 * v * h  # matmuls + embedding + lm_head (norms left out)


#: (name, generate_options or None, model_kwargs or None, batches, rough cost in seconds on the GPU)
VARIANTS = {
    "nf4": [("static_kv_cache", {"cache_implementation": "static", "disable_compile": True}, None, (1,), 20)],
    "bf16": [  # cheap ones first; the compiled one (minutes of compilation) only with what is left
        ("static_kv_cache", {"cache_implementation": "static", "disable_compile": True}, None, (1, 8), 25),
        ("eager_attention", None, {"attn_implementation": "eager"}, (8,), 40),
        ("static_kv_cache_compiled", {"cache_implementation": "static"}, None, (1,), 150),
    ],
}


def _variants(llm, quant, folder, device, prompts_for, N, L, wb, bw_tbs, remaining, reserve, save, dry) -> dict:
    """Backend settings toggled through the backend (generate_options, or model_kwargs on a reload)."""
    from kgrag_utils.llm import load_llm

    out: dict = {}
    for name, gen_opts, model_kwargs, batches, cost in VARIANTS[quant]:
        if not dry and remaining() - reserve < cost:
            out[name] = {"skipped": f"time budget: {remaining() - reserve:.0f} s left, needs about {cost} s"}
            save()
            continue
        v: dict = {"generate_options": gen_opts, "model_kwargs": model_kwargs, "runs": []}
        if device != "cuda" and gen_opts and not gen_opts.get("disable_compile"):
            v["note"] = "transformers compiles a static-cache forward pass on CUDA only: here it ran eagerly"
        out[name] = v
        other = None
        try:
            target = llm
            if model_kwargs:
                opts = {"quantization": "4bit"} if quant == "nf4" else {"dtype": "bfloat16"}
                t = time.perf_counter()
                other = load_llm(str(folder), cache=False, device=device, model_kwargs=model_kwargs, **opts)
                v["load_s"] = round(time.perf_counter() - t, 2)
                target = other
            saved = dict(target.generate_options)
            if gen_opts:
                target.generate_options = dict(gen_opts)
            try:
                for b in batches:
                    run = _measure(target, prompts_for(b), N, device)
                    run.update(_bounds(wb, target.model.config, b, L, N, bw_tbs))
                    run["decode_fraction_of_bound"] = _sig(run["decode_tokens_per_s"], run["bandwidth_bound_tokens_per_s"])
                    v["runs"].append(run)
                    save()
            finally:
                target.generate_options = saved
        except Exception as exc:
            v["error"] = _short(exc)
            v["traceback"] = traceback.format_exc()[-1500:]
        finally:
            if other is not None:
                other.close()
                del other
                _free(device)
        save()
    return out


# ============================================================================ part: tests
def run_tests_part(dry: bool, work: Path, env: dict, timeout: float, log) -> dict:
    junit = work / "junit.xml"
    cmd = [sys.executable, "-m", "pytest", "tests/test_cuda.py", "-m", "cuda", "-q", "-p", "no:cacheprovider",
           f"--junitxml={junit}", "-rA"]
    env = dict(env)
    if dry:
        env["KGRAG_CUDA_TESTS_ON_CPU"] = "1"
    rc, seconds, timed_out = _run_child(cmd, env, timeout, log)
    result: dict = {"command": " ".join(cmd[1:]), "exit_code": rc, "seconds": round(seconds, 1), "timed_out": timed_out,
                    "tests": []}
    if junit.exists():
        for case in ET.parse(junit).getroot().iter("testcase"):
            outcome, message = "passed", None
            for tag in ("failure", "error", "skipped"):
                node = case.find(tag)
                if node is not None:
                    outcome = {"failure": "failed"}.get(tag, tag)
                    message = (node.get("message") or node.text or "")[:600]
            result["tests"].append({"name": case.get("name"), "outcome": outcome, "seconds": float(case.get("time", 0)),
                                    "message": message})
    counts = {}
    for t in result["tests"]:
        counts[t["outcome"]] = counts.get(t["outcome"], 0) + 1
    result["counts"] = counts
    result["status"] = ("ok" if rc == 0 and result["tests"] and counts.get("passed") == len(result["tests"])
                        else "timeout" if timed_out else "failed")
    return result


# ============================================================================ orchestration
_CHILDREN: list[subprocess.Popen] = []


def _stop_children(signum, frame) -> None:
    """The check itself is stopped: stop the running part (its own process group) and record the stop."""
    for proc in _CHILDREN:
        if proc.poll() is None:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
    raise SystemExit(f"gpu_check stopped by signal {signum}")


def _run_child(cmd: list[str], env: dict, timeout: float, log) -> tuple[int | None, float, bool]:
    t = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=str(ROOT), env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    _CHILDREN.append(proc)
    try:
        rc = proc.wait(timeout=max(1.0, timeout))
        return rc, time.perf_counter() - t, False
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGTERM)  # the part's own process group: its kernels and workers too
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        return None, time.perf_counter() - t, True


def _work_dir(dry: bool) -> Path:
    """/dev/shm when it can hold the 8B checkpoint (16 GB) with room to spare, else the temp folder."""
    need = 1 if dry else 40
    for base in ("/dev/shm", tempfile.gettempdir()):
        try:
            if shutil.disk_usage(base).free / 2**30 > need:
                return Path(tempfile.mkdtemp(prefix="kgrag_gpu_check_", dir=base))
        except OSError:
            continue
    return Path(tempfile.mkdtemp(prefix="kgrag_gpu_check_"))


def _tail(path: Path, n: int = 2500) -> str:
    try:
        return path.read_text(errors="replace")[-n:]
    except OSError:
        return ""


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--dry-run", action="store_true", help="CPU, tiny shapes: proves the script, measures nothing real")
    ap.add_argument("--out", default=None, help=f"JSON file (default {REAL_OUT}, dry run {DRY_OUT})")
    ap.add_argument("--parts", default=",".join(PARTS), help=f"comma-separated subset of {','.join(PARTS)}")
    ap.add_argument("--budget-s", type=float, default=DEFAULT_BUDGET_S, help="the whole check's time budget")
    ap.add_argument("--bandwidth-tbs", type=float, default=H200_BANDWIDTH_TBS, help="GPU memory bandwidth for the bound")
    ap.add_argument("--keep-work", action="store_true", help="keep the work folder (models, records, logs)")
    ap.add_argument("--logs-dir", help="copy each part's log (and the notebook's) here before the work folder goes")
    ap.add_argument("--method-via", choices=("auto", "runner", "run"), default="auto",
                    help="the method part: through the runner (papermill), the method's run, or auto (runner if importable)")
    ap.add_argument("--child", choices=("method", "throughput"), help=argparse.SUPPRESS)
    ap.add_argument("--work", help=argparse.SUPPRESS)
    ap.add_argument("--partial", help=argparse.SUPPRESS)
    ap.add_argument("--deadline", type=float, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)

    if args.child:
        partial = Partial(Path(args.partial))
        try:
            if args.child == "method":
                part_method(args.dry_run, Path(args.work), partial, args.deadline, args.method_via)
            else:
                part_throughput(args.dry_run, Path(args.work), partial, args.deadline, args.bandwidth_tbs)
            partial.set("complete", True)
            return 0
        except Exception as exc:
            partial.set("error", _short(exc))
            partial.set("traceback", traceback.format_exc()[-3000:])
            raise

    parts = [p.strip() for p in args.parts.split(",") if p.strip()]
    unknown = [p for p in parts if p not in PARTS]
    if unknown:
        ap.error(f"unknown part(s) {unknown}: use {', '.join(PARTS)}")
    out = Path(args.out or (DRY_OUT if args.dry_run else REAL_OUT))
    out = out if out.is_absolute() else ROOT / out
    if args.dry_run and out.resolve() == (ROOT / REAL_OUT).resolve():
        ap.error(f"a dry run never writes {REAL_OUT}: that file holds GPU figures only")
    start = time.time()
    deadline = start + args.budget_s
    signal.signal(signal.SIGTERM, _stop_children)
    signal.signal(signal.SIGINT, _stop_children)
    machine = machine_info()
    if not args.dry_run and not machine.get("cuda_available"):
        write_result(out, {"check": "gpu_check", "dry_run": False, "status": "no_cuda", "date": _now(),
                           "machine": machine, "versions": versions()}, args)
        print("gpu_check: no CUDA device is visible to torch: run with --dry-run on a CPU machine.", file=sys.stderr)
        return 2
    work = _work_dir(args.dry_run)
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT)] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
    env.update({"KGRAG_ROOT": str(ROOT), "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1",
                "TOKENIZERS_PARALLELISM": "false", "PYTHONUNBUFFERED": "1"})
    for var, sub in (("KGRAG_CACHE_DIR", "cache"), ("KGRAG_RESULTS_DIR", "results"), ("KGRAG_RUNS_DIR", "runs"),
                     ("KGRAG_FIGURES_DIR", "figures"), ("KGRAG_SAMPLE_DIR", "sample")):
        env[var] = str(work / sub)  # fresh caches: every LLM call and embedding is computed, not replayed
    record = {
        "check": "gpu_check", "dry_run": args.dry_run,
        "label": ("DRY RUN on the CPU with tiny shapes: proves the script runs; these are NOT GPU figures"
                  if args.dry_run else "GPU run: random weights, real shapes; speed and memory only, no quality"),
        "date": _now(), "machine": machine, "versions": versions(),
        "conditions": {"budget_s": args.budget_s, "parts": parts, "bandwidth_tbs": args.bandwidth_tbs,
                       "work_dir": str(work), "throughput": DRY_THROUGHPUT if args.dry_run else REAL_THROUGHPUT,
                       "method": DRY_METHOD if args.dry_run else METHOD},
        "parts": {p: {"status": "not run", "reason": "not requested"} for p in PARTS},
    }
    for p in parts:
        record["parts"][p] = {"status": "pending"}

    def save():
        record["seconds"] = round(time.time() - start, 1)
        write_result(out, record, args)  # + provenance (command, arguments, commit, environment)

    save()
    print(f"[gpu_check] {'DRY RUN (CPU)' if args.dry_run else 'GPU'}: parts {parts}, budget {args.budget_s:.0f} s, "
          f"work {work}", flush=True)
    try:
        for name in parts:  # tests, method, throughput: the order of PARTS
            cap = float("inf") if args.dry_run else PART_CAPS[name]
            left = deadline - time.time()
            if left < 20:
                record["parts"][name] = {"status": "skipped", "reason": f"time budget: {left:.0f} s left"}
                save()
                continue
            timeout = min(cap, left)
            log_path = work / f"{name}.log"
            t = time.time()
            with open(log_path, "w") as log:
                if name == "tests":
                    result = run_tests_part(args.dry_run, work, env, timeout, log)
                else:
                    partial = work / f"{name}.partial.json"
                    cmd = [sys.executable, str(Path(__file__).resolve()), "--child", name, "--work", str(work),
                           "--partial", str(partial), "--deadline", str(t + timeout - 5),
                           "--bandwidth-tbs", str(args.bandwidth_tbs), "--method-via", args.method_via] + (
                        ["--dry-run"] if args.dry_run else [])
                    rc, seconds, timed_out = _run_child(cmd, env, timeout, log)
                    result = json.loads(partial.read_text()) if partial.exists() else {}
                    result.update({"exit_code": rc, "timed_out": timed_out})
                    ok = rc == 0 and result.get("complete")
                    if name == "method":
                        steps = result.get("steps", {})
                        ok = ok and all((steps.get(k) or {}).get("ok") for k in ("records", "records_oracle_patterns"))
                    result["status"] = "ok" if ok else ("timeout" if timed_out else "failed")
            result["seconds"] = round(time.time() - t, 1)
            if result["status"] != "ok":
                result["log_tail"] = _tail(log_path)
            record["parts"][name] = result
            save()
            print(f"[gpu_check] {name}: {result['status']} in {result['seconds']} s", flush=True)
    finally:
        for p in parts:
            if record["parts"][p].get("status") == "pending":
                record["parts"][p] = {"status": "stopped", "reason": "the check was stopped (signal) or crashed first"}
        record["status"] = "ok" if all(record["parts"][p].get("status") == "ok" for p in parts) else "incomplete"
        save()
        if args.logs_dir:
            logs = Path(args.logs_dir)
            logs.mkdir(parents=True, exist_ok=True)
            for f in list(work.glob("*.log")) + list(work.glob("runs/*/*.log")) + list(work.glob("junit.xml")):
                shutil.copy2(f, logs / f.name)
        if not args.keep_work:
            shutil.rmtree(work, ignore_errors=True)
    print(f"[gpu_check] {record['status']} in {record['seconds']} s -> {out}", flush=True)
    return 0 if record["status"] == "ok" else 1


if __name__ == "__main__":
    sys.exit(main())
