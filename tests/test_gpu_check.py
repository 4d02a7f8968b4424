"""benchmarks/gpu_check.py: its dry run on the CPU (the JSON's structure) and the bandwidth-bound arithmetic."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "benchmarks" / "gpu_check.py"


def _module(name: str = "gpu_check"):
    """The script, or its throughput part (`gpu_throughput`), imported from benchmarks/."""
    spec = importlib.util.spec_from_file_location(name, ROOT / "benchmarks" / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_weight_bytes_count_the_actual_storage_and_the_bound_divides_bandwidth_by_it(tmp_path):
    pytest.importorskip("transformers")
    from kgrag_utils import random_models as rm
    from kgrag_utils.llm import load_llm

    gc = _module("gpu_throughput")
    shape = dict(gc.DRY_RUN_TINY)
    folder = rm.save_random_llama(tmp_path / "m", shape, rm.word_tokenizer(shape["vocab_size"]), dtype="bfloat16")
    llm = load_llm(str(folder), dtype="bfloat16", cache=False)
    wb = gc.weight_bytes(llm.model)
    n_params = sum(p.numel() for p in llm.model.parameters())
    assert wb["parameter_bytes"] == 2 * n_params and wb["quant_state_bytes"] == 0
    assert wb["input_embedding_bytes"] == 2 * shape["vocab_size"] * shape["hidden_size"]
    assert wb["read_per_decode_step_bytes"] == wb["parameter_bytes"] - wb["input_embedding_bytes"]
    # the dense count of the shape agrees with the model (norm weights are the only parameters it leaves out)
    norms = shape["hidden_size"] * (2 * shape["num_hidden_layers"] + 1)
    assert gc.rm_param_count(shape) == n_params - norms

    b = gc._bounds(wb, llm.model.config, batch=8, prompt=100, decode=20, bw_tbs=4.8)
    assert b["bandwidth_bound_tokens_per_s"] == pytest.approx(8 * 4.8e12 / wb["read_per_decode_step_bytes"], rel=1e-6)
    kv = 2 * shape["num_hidden_layers"] * shape["num_key_value_heads"] * shape["head_dim"] * 2 * 8 * 110
    assert b["kv_bytes_read_per_step"] == kv
    assert b["bandwidth_bound_with_kv_tokens_per_s"] < b["bandwidth_bound_tokens_per_s"]
    llm.close()


@pytest.mark.skipif(importlib.util.find_spec("bitsandbytes") is None, reason="needs bitsandbytes")
def test_nf4_weight_bytes_hold_packed_weights_and_quantization_state(tmp_path):
    from kgrag_utils import random_models as rm
    from kgrag_utils.llm import load_llm

    gc = _module("gpu_throughput")
    shape = dict(gc.DRY_RUN_TINY)
    folder = rm.save_random_llama(tmp_path / "m", shape, rm.word_tokenizer(shape["vocab_size"]), dtype="bfloat16")
    llm = load_llm(str(folder), quantization="4bit", cache=False)
    wb = gc.weight_bytes(llm.model)
    matmul = gc.rm_param_count(shape) - 2 * shape["vocab_size"] * shape["hidden_size"]  # the 4-bit layers
    assert wb["packed_4bit_bytes"] == matmul // 2  # two 4-bit values per byte
    assert 0 < wb["quant_state_bytes"] < wb["packed_4bit_bytes"]  # absmax per 64-block (+ nested state)
    assert wb["lm_head_bytes"] == 2 * shape["vocab_size"] * shape["hidden_size"]  # the output layer stays bf16
    llm.close()


def test_the_method_run_without_papermill_follows_the_method_protocol(tmp_path, monkeypatch):
    """The method part's fallback (no papermill on the device, or a notebook that failed): SimGRAG's own run,
    on a tiny random model, with every question recorded and every unparseable reply a failure scored 0."""
    pytest.importorskip("sentence_transformers")
    from kgrag_utils import random_models as rm

    monkeypatch.setenv("KGRAG_RESULTS_DIR", str(tmp_path / "results"))
    gc = _module()
    tiny = rm.save_random_llama(tmp_path / "tiny-llm", rm.TINY_LLAMA, rm.char_tokenizer(), seed=1)
    emb = rm.save_tiny_bert_embedder(tmp_path / "tiny-embedder", seed=1)
    for source in ("llm", "oracle"):
        params = {"dataset": "sample-movies-2hop", "limit": 1, "batch_size": 1, "pattern_source": source,
                  "pattern_max_new_tokens": 8, "answer_max_new_tokens": 8}
        run_name = gc._run_simgrag_directly(str(tiny), str(emb), params, "cpu")
        rec = gc._check_records(run_name, 1)
        assert rec["ok"] and rec["n_records"] == 1 and rec["unparseable_not_counted_as_failure"] == [], rec
        if source == "oracle":  # gold patterns: retrieval and the answer stage ran
            assert rec["answers_generated"] == 1, rec


def test_a_dry_run_never_writes_the_gpu_result_file():
    gc = _module()
    with pytest.raises(SystemExit):
        gc.main(["--dry-run", "--out", gc.REAL_OUT])


@pytest.mark.slow
def test_dry_run_executes_every_part_on_the_cpu_and_writes_one_labelled_json(tmp_path):
    pytest.importorskip("bitsandbytes")
    pytest.importorskip("sentence_transformers")
    out = tmp_path / "dry.json"
    env = {k: v for k, v in os.environ.items() if not k.startswith("KGRAG_CUDA_TESTS")}
    proc = subprocess.run([sys.executable, str(SCRIPT), "--dry-run", "--out", str(out), "--budget-s", "3600"],
                          cwd=str(ROOT), env=env, capture_output=True, text=True, timeout=4000)
    assert out.exists(), proc.stdout[-2000:] + proc.stderr[-2000:]
    rec = json.loads(out.read_text())
    problems = {k: {kk: vv for kk, vv in v.items() if kk in ("status", "error", "log_tail")}
                for k, v in rec["parts"].items() if v.get("status") != "ok"}
    assert proc.returncode == 0 and rec["status"] == "ok", problems
    assert rec["dry_run"] is True and "NOT GPU figures" in rec["label"]
    assert rec["versions"]["torch"] and rec["machine"]["python"]

    tests = rec["parts"]["tests"]
    assert tests["counts"] == {"passed": len(tests["tests"])} and len(tests["tests"]) >= 5

    method = rec["parts"]["method"]["steps"]
    assert method["tiny_4bit"]["linear4bit_modules"] > 0
    r = method["records"]
    assert r["ok"] and r["n_records"] == r["expected"] and r["unparseable_not_counted_as_failure"] == []
    assert r["failed"] >= r["unparseable_patterns"] + r["unparseable_answers"]
    oracle = method["records_oracle_patterns"]  # gold patterns: retrieval and the answer stage ran too
    assert oracle["ok"] and oracle["answers_generated"] > 0 and oracle["unparseable_not_counted_as_failure"] == []

    thr = rec["parts"]["throughput"]
    assert thr["conditions"]["shape_name"] == "DRY_RUN_TINY"
    for quant in ("nf4", "bf16"):
        q = thr["steps"][quant]
        assert q["load_s"] >= 0 and q["weights"]["read_per_decode_step_bytes"] > 0
        assert [run["batch"] for run in q["runs"]] == list(thr["conditions"]["batches"])
        for run in q["runs"]:
            assert run["prefill_tokens_per_s"] > 0 and run["bandwidth_bound_tokens_per_s"] > 0
            assert run["completion_tokens_per_row"] == [thr["conditions"]["decode_tokens"] + 1]
        assert q["variants"] and all("runs" in v or "skipped" in v for v in q["variants"].values())
    assert thr["steps"]["nf4"]["linear4bit_modules"] > 0 and thr["steps"]["bf16"]["linear4bit_modules"] == 0
