"""The GPU check's throughput part (benchmarks/gpu_check.py runs it in its own process), and the device helpers both
use: a model of Llama-3.1-8B's shape with random weights in bf16 and nf4, prefill and decode tokens/s against the
memory-bandwidth bound, then backend-setting variants as the time budget allows (docs/GPU.md)."""

from __future__ import annotations

import gc
import importlib.util
import resource
import time
import traceback
from pathlib import Path

from kgrag_utils.records import atomic_write_json

H200_BANDWIDTH_TBS = 4.8  # HBM3e, NVIDIA's H200 SXM specification
H200_BF16_TFLOPS = 989.0  # dense bf16 tensor-core peak, NVIDIA's H200 SXM specification
# the throughput part: real (8B shape, 800-token prompts) and the dry run's tiny stand-in
REAL_THROUGHPUT = dict(shape="LLAMA_31_8B", prompt_tokens=800, decode_tokens=64, batches=(1, 8, 32))
DRY_THROUGHPUT = dict(shape="DRY_RUN_TINY", prompt_tokens=48, decode_tokens=8, batches=(1, 8, 32))
DRY_RUN_TINY = dict(vocab_size=2048, hidden_size=128, intermediate_size=256, num_hidden_layers=2,
                    num_attention_heads=4, num_key_value_heads=2, head_dim=32, max_position_embeddings=1024,
                    tie_word_embeddings=False)
#: (name, generate_options or None, model_kwargs or None, batches, rough cost in seconds on the GPU)
VARIANTS = {
    "nf4": [("static_kv_cache", {"cache_implementation": "static", "disable_compile": True}, None, (1,), 20)],
    "bf16": [  # cheap ones first; the compiled one (minutes of compilation) only with what is left
        ("static_kv_cache", {"cache_implementation": "static", "disable_compile": True}, None, (1, 8), 25),
        ("eager_attention", None, {"attn_implementation": "eager"}, (8,), 40),
        ("static_kv_cache_compiled", {"cache_implementation": "static"}, None, (1,), 150),
    ],
}


# ============================================================================ device helpers (both parts)
def short(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0][:400] if text else ''}"


class Partial:
    """A part's results, written to disk after every step (the parent reads them even after a kill)."""

    def __init__(self, path: Path):
        self.path, self.data = path, {"complete": False, "steps": {}}
        self.save()

    def step(self, name: str, value) -> None:
        self.data["steps"][name] = value
        self.save()

    def set(self, key: str, value) -> None:
        self.data[key] = value
        self.save()

    def save(self) -> None:
        atomic_write_json(self.path, self.data)


def device_of(dry: bool) -> str:
    import torch

    if not dry and not torch.cuda.is_available():
        raise RuntimeError("no CUDA device visible to torch")
    return "cpu" if dry else "cuda"


def sync(device: str) -> None:
    if device == "cuda":
        import torch

        torch.cuda.synchronize()


def free(device: str) -> None:
    gc.collect()
    if device == "cuda":
        import torch

        torch.cuda.empty_cache()


def reset_peak(device: str) -> None:
    if device == "cuda":
        import torch

        torch.cuda.reset_peak_memory_stats()


def memory(device: str) -> dict:
    """Memory figures: GPU allocated and peaks on CUDA, else the process's peak RSS."""
    if device != "cuda":
        return {"cpu_peak_rss_gib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20, 3)}
    import torch

    return {"gpu_allocated_gib": round(torch.cuda.memory_allocated() / 2**30, 3),
            "gpu_peak_allocated_gib": round(torch.cuda.max_memory_allocated() / 2**30, 3),
            "gpu_peak_reserved_gib": round(torch.cuda.max_memory_reserved() / 2**30, 3)}


# ============================================================================ arithmetic
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
        if (qs := getattr(p, "quant_state", None)) is not None:
            four_bit += tensor_bytes(p)
            qstate += state_bytes(qs)
    emb, head = model.get_input_embeddings().weight, list(model.get_output_embeddings().parameters())
    tied = any(p.data_ptr() == emb.data_ptr() for p in head)
    return {"parameter_bytes": total, "quant_state_bytes": qstate, "packed_4bit_bytes": four_bit,
            "input_embedding_bytes": tensor_bytes(emb), "embedding_tied": tied,
            "lm_head_bytes": sum(tensor_bytes(p) for p in head),
            "read_per_decode_step_bytes": total + qstate - (0 if tied else tensor_bytes(emb))}


def _head_dim(config) -> int:
    return getattr(config, "head_dim", None) or config.hidden_size // config.num_attention_heads


def _bounds(weights: dict, config, batch: int, prompt: int, decode: int, bw_tbs: float) -> dict:
    kv_per_token = 2 * config.num_hidden_layers * config.num_key_value_heads * _head_dim(config) * 2  # bf16 K and V
    kv = kv_per_token * batch * (prompt + decode / 2)  # mean context during decoding
    w = weights["read_per_decode_step_bytes"]
    return {"bandwidth_bound_tokens_per_s": round(batch * bw_tbs * 1e12 / w, 1),
            "bandwidth_bound_with_kv_tokens_per_s": round(batch * bw_tbs * 1e12 / (w + kv), 1),
            "kv_bytes_read_per_step": int(kv)}


def rm_param_count(shape: dict) -> int:
    """Parameters of the dense model of `shape` (the nf4 model stores its matmul weights packed)."""
    h, i, layers, v = shape["hidden_size"], shape["intermediate_size"], shape["num_hidden_layers"], shape["vocab_size"]
    hd = shape.get("head_dim") or h // shape["num_attention_heads"]
    q, kv = shape["num_attention_heads"] * hd, shape["num_key_value_heads"] * hd
    return layers * (h * q + 2 * h * kv + q * h + 3 * h * i) + 2 * v * h  # matmuls + embedding + lm_head (no norms)


def _sig(measured, bound):
    return None if measured is None else float(f"{measured / bound:.3g}")


# ============================================================================ measurement
def _measure(llm, prompts: list[str], decode: int, device: str, reps: int = 2) -> dict:
    """Prefill = a generate with one new token; decode = (generate with 1 + decode tokens) - prefill."""
    def min_time(new_tokens):
        best, out = float("inf"), None
        for _ in range(reps):
            sync(device)
            t = time.perf_counter()
            out = llm.generate(prompts, max_new_tokens=new_tokens)
            sync(device)
            best = min(best, time.perf_counter() - t)
        return best, out

    llm.batch_size = len(prompts)
    t = time.perf_counter()
    llm.generate(prompts, max_new_tokens=1 + decode)  # warm-up with the measured shapes (kernels, compile)
    sync(device)
    warm = time.perf_counter() - t
    (prefill_s, out), (total_s, res) = min_time(1), min_time(1 + decode)
    completions = [r.completion_tokens for r in res]
    decode_s = total_s - prefill_s
    run = {"batch": len(prompts), "prompt_tokens_per_row": out[0].prompt_tokens, "warmup_s": round(warm, 3),
           "prefill_s": round(prefill_s, 4), "prefill_tokens_per_s": round(sum(r.prompt_tokens for r in out) / prefill_s, 1),
           "generate_s": round(total_s, 4), "decode_steps": decode, "completion_tokens_per_row": sorted(set(completions)),
           "decode_tokens_per_s": None, "decode_ms_per_step": None}
    if decode_s > 0.05 * total_s:
        run["decode_tokens_per_s"] = round(sum(c - 1 for c in completions) / decode_s, 1)
        run["decode_ms_per_step"] = round(decode_s / decode * 1000, 2)
    else:  # timing noise larger than the decode time (only seen on a busy CPU): no figure rather than a wrong one
        run["decode_note"] = "not measurable: generate time within noise of the prefill time"
    return run


class _Setup:
    """What every measurement of one throughput part shares: device, saved model, shape, budget, output."""

    def __init__(self, dry, device, folder, shape, spec, bw_tbs, partial, deadline):
        self.dry, self.device, self.folder, self.shape, self.bw_tbs = dry, device, folder, shape, bw_tbs
        self.L, self.N, self.batches = spec["prompt_tokens"], spec["decode_tokens"], spec["batches"]
        self.partial, self.deadline = partial, deadline

    def remaining(self) -> float:
        return self.deadline - time.time()

    def prompts(self, batch: int) -> list[str]:
        from kgrag_utils import random_models as rm

        return [rm.word_prompt(self.L, self.shape["vocab_size"], seed=1000 * batch + i) for i in range(batch)]

    def load(self, quant: str, **kwargs):
        from kgrag_utils.llm import load_llm

        opts = {"quantization": "4bit"} if quant == "nf4" else {"dtype": "bfloat16"}
        return load_llm(str(self.folder), cache=False, device=self.device, **opts, **kwargs)

    def run(self, llm, batch: int, wb: dict) -> dict:
        """One batch size measured, with the bandwidth bounds beside it."""
        run = _measure(llm, self.prompts(batch), self.N, self.device)
        run.update(_bounds(wb, llm.model.config, batch, self.L, self.N, self.bw_tbs))
        run["decode_fraction_of_bound"] = _sig(run["decode_tokens_per_s"], run["bandwidth_bound_tokens_per_s"])
        return run


def part_throughput(dry: bool, work: Path, partial: Partial, deadline: float, bw_tbs: float) -> None:
    from kgrag_utils import random_models as rm

    device = device_of(dry)
    spec = DRY_THROUGHPUT if dry else REAL_THROUGHPUT
    shape = DRY_RUN_TINY if dry else rm.LLAMA_31_8B
    partial.set("conditions", {"device": device, "shape_name": spec["shape"], "shape": shape,
                               "prompt_tokens": spec["prompt_tokens"], "decode_tokens": spec["decode_tokens"],
                               "batches": list(spec["batches"]), "bandwidth_tbs_assumed": bw_tbs,
                               "bf16_tflops_assumed": H200_BF16_TFLOPS, "weights": "random (normal, std 0.02); "
                               "eos and pad output rows zeroed so no row stops early",
                               "prompts": "distinct random words of an exact-vocabulary word tokenizer, no padding",
                               "timing": "min of 2 repetitions after one warm-up at the same shapes"})
    t = time.perf_counter()
    folder = rm.save_random_llama(work / "throughput-model", shape, rm.word_tokenizer(shape["vocab_size"]),
                                  dtype="bfloat16", device=device, silence=(rm.EOS_ID, rm.PAD_ID))
    partial.step("build_and_save", {"seconds": round(time.perf_counter() - t, 1), "folder_on": str(work),
                                    "checkpoint_bytes": sum(f.stat().st_size for f in folder.glob("*.safetensors"))})
    free(device)
    setup = _Setup(dry, device, folder, shape, spec, bw_tbs, partial, deadline)
    per_quant_s: list[float] = []
    for quant in ("nf4", "bf16"):
        if per_quant_s and setup.remaining() < per_quant_s[-1] * 1.1:
            partial.step(quant, {"skipped": f"time budget: {setup.remaining():.0f} s left, the previous quantization "
                                            f"took {per_quant_s[-1]:.0f} s"})
            continue
        q0 = time.time()
        try:
            _one_quantization(setup, quant, reserve=(per_quant_s[-1] * 1.1 if per_quant_s else 0.0))
        except Exception as exc:  # e.g. bitsandbytes missing or failing on this GPU: bf16 is still measured
            entry = partial.data["steps"].get(quant) or {}
            entry.update({"error": short(exc), "traceback": traceback.format_exc()[-2000:]})
            partial.step(quant, entry)
            free(device)
        per_quant_s.append((partial.data["steps"].get(quant) or {}).get("measure_s") or time.time() - q0)


def _one_quantization(setup: _Setup, quant: str, reserve: float) -> None:
    """Load the saved model in one quantization, measure every batch size, then the variants."""
    device, shape, q0 = setup.device, setup.shape, time.time()
    reset_peak(device)
    t = time.perf_counter()
    llm = setup.load(quant)
    sync(device)
    entry: dict = {"load_s": round(time.perf_counter() - t, 2), "after_load": memory(device)}
    if importlib.util.find_spec("bitsandbytes"):
        import bitsandbytes as bnb

        entry["linear4bit_modules"] = sum(isinstance(m, bnb.nn.Linear4bit) for m in llm.model.modules())
    entry["lm_head"] = type(llm.model.get_output_embeddings()).__name__
    entry["attn_implementation"] = getattr(llm.model.config, "_attn_implementation", None)
    entry["weights"] = wb = weight_bytes(llm.model)
    entry["runs"] = []
    setup.partial.step(quant, entry)
    # every matmul incl. lm_head, not the embedding gather; attention: causal QK^T + AV
    matmul_params = rm_param_count(shape) - shape["hidden_size"] * shape["vocab_size"]
    attn = 2 * 2 * shape["num_hidden_layers"] * shape["num_attention_heads"] * _head_dim(llm.model.config) * setup.L / 2
    for b in setup.batches:
        if setup.remaining() < 15:
            entry["runs"].append({"batch": b, "skipped": "time budget"})
            continue
        try:
            reset_peak(device)
            run = setup.run(llm, b, wb)
            run["prefill_compute_bound_tokens_per_s"] = round(H200_BF16_TFLOPS * 1e12 / (2 * matmul_params + attn), 1)
            run.update(memory(device))
        except Exception as exc:
            run = {"batch": b, "error": short(exc), "traceback": traceback.format_exc()[-1500:]}
            free(device)
        entry["runs"].append(run)
        setup.partial.step(quant, entry)
    entry["measure_s"] = round(time.time() - q0, 1)
    reserve = max(reserve, time.time() - q0) * 1.1 if quant == "nf4" else 0.0
    entry["variants"] = _variants(setup, llm, quant, wb, reserve, save=lambda: setup.partial.step(quant, entry))
    setup.partial.step(quant, entry)
    llm.close()
    del llm
    free(device)


def _variants(setup: _Setup, llm, quant: str, wb: dict, reserve: float, save) -> dict:
    """Backend settings toggled through the backend (generate_options, or model_kwargs on a reload)."""
    out: dict = {}
    for name, gen_opts, model_kwargs, batches, cost in VARIANTS[quant]:
        if not setup.dry and setup.remaining() - reserve < cost:
            out[name] = {"skipped": f"time budget: {setup.remaining() - reserve:.0f} s left, needs about {cost} s"}
            save()
            continue
        v: dict = {"generate_options": gen_opts, "model_kwargs": model_kwargs, "runs": []}
        if setup.device != "cuda" and gen_opts and not gen_opts.get("disable_compile"):
            v["note"] = "transformers compiles a static-cache forward pass on CUDA only: here it ran eagerly"
        out[name], other = v, None
        try:
            target = llm
            if model_kwargs:
                t = time.perf_counter()
                target = other = setup.load(quant, model_kwargs=model_kwargs)
                v["load_s"] = round(time.perf_counter() - t, 2)
            saved = dict(target.generate_options)
            if gen_opts:
                target.generate_options = dict(gen_opts)
            try:
                for b in batches:
                    v["runs"].append(setup.run(target, b, wb))
                    save()
            finally:
                target.generate_options = saved
        except Exception as exc:
            v["error"], v["traceback"] = short(exc), traceback.format_exc()[-1500:]
        finally:
            if other is not None:
                other.close()
                del other
                free(device=setup.device)
        save()
    return out
