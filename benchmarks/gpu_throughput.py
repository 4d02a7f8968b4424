"""The GPU check's throughput part (benchmarks/gpu_check.py runs it in its own process): a model of
Llama-3.1-8B's shape with random weights in bf16 and nf4, prefill and decode tokens/s against the
memory-bandwidth bound, then backend-setting variants as the time budget allows."""

from __future__ import annotations

import sys
import time
import traceback
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # gpu_device beside it, when imported on its own

from gpu_device import Partial, device as _device_of, free, memory, reset_peak, short, sync  # noqa: E402

H200_BANDWIDTH_TBS = 4.8  # HBM3e, NVIDIA's H200 SXM specification
H200_BF16_TFLOPS = 989.0  # dense bf16 tensor-core peak, NVIDIA's H200 SXM specification

# the throughput part: real (8B shape, 800-token prompts) and the dry run's tiny stand-in
REAL_THROUGHPUT = dict(shape="LLAMA_31_8B", prompt_tokens=800, decode_tokens=64, batches=(1, 8, 32))
DRY_THROUGHPUT = dict(shape="DRY_RUN_TINY", prompt_tokens=48, decode_tokens=8, batches=(1, 8, 32))
DRY_RUN_TINY = dict(vocab_size=2048, hidden_size=128, intermediate_size=256, num_hidden_layers=2,
                    num_attention_heads=4, num_key_value_heads=2, head_dim=32, max_position_embeddings=1024,
                    tie_word_embeddings=False)


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
    sync(device)
    warm = time.perf_counter() - t
    pre = []
    for _ in range(reps_prefill):
        sync(device)
        t = time.perf_counter()
        out = llm.generate(prompts, max_new_tokens=1)
        sync(device)
        pre.append(time.perf_counter() - t)
    dec, completions = [], []
    for _ in range(reps_decode):
        sync(device)
        t = time.perf_counter()
        res = llm.generate(prompts, max_new_tokens=1 + decode)
        sync(device)
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

    device = _device_of(dry)
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
    free(device)
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
            entry.update({"error": short(exc), "traceback": traceback.format_exc()[-2000:]})
            partial.step(quant, entry)
            free(device)
        per_quant_s.append((partial.data["steps"].get(quant) or {}).get("measure_s") or time.time() - q0)


def _one_quantization(quant, folder, device, shape, vocab, L, N, batches, bw_tbs, partial, remaining, reserve, dry):
    """Load the saved model in one quantization, measure every batch size, then the variants."""
    from kgrag_utils import random_models as rm
    from kgrag_utils.llm import load_llm

    q0 = time.time()

    reset_peak(device)
    t = time.perf_counter()
    opts = {"quantization": "4bit"} if quant == "nf4" else {"dtype": "bfloat16"}
    llm = load_llm(str(folder), cache=False, device=device, **opts)
    sync(device)
    entry: dict = {"load_s": round(time.perf_counter() - t, 2), "after_load": memory(device)}
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
            reset_peak(device)
            run = _measure(llm, prompts, N, device)
            run.update(_bounds(wb, llm.model.config, b, L, N, bw_tbs))
            run["decode_fraction_of_bound"] = _sig(run["decode_tokens_per_s"], run["bandwidth_bound_tokens_per_s"])
            flops = _prefill_flops_per_token(llm.model.config, L, matmul_params)
            run["prefill_compute_bound_tokens_per_s"] = round(H200_BF16_TFLOPS * 1e12 / flops, 1)
            run.update(memory(device))
        except Exception as exc:
            run = {"batch": b, "error": short(exc), "traceback": traceback.format_exc()[-1500:]}
            free(device)
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
    free(device)


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
            v["error"] = short(exc)
            v["traceback"] = traceback.format_exc()[-1500:]
        finally:
            if other is not None:
                other.close()
                del other
                free(device)
        save()
    return out
