"""kgrag_utils/onnx_encoder.py and the embedding runtime choice: the same vectors as torch, one export, clear refusals."""

from __future__ import annotations

import numpy as np
import pytest

from kgrag_utils import embeddings, onnx_encoder
from kgrag_utils.errors import ConfigError

NAMES = ["Kismet", "The Godfather Part II", "Ingrid Bergman", "Tom Hanks", "a much longer entity name, with a comma",
         "Crna mačka, beli mačor", "1999", "directed_by", "Q", "the written_by relation of a film"] * 3


@pytest.fixture(scope="module")
def minilm_st():
    return embeddings.load_embedder("minilm", cache=False, runtime="torch").model


def _onnx(st, folder):
    model_id, source = embeddings._resolve("minilm")
    return onnx_encoder.OnnxSentenceEncoder(st, model_id, source, folder, threads=1, spin=False)


def test_onnx_gives_the_torch_vectors_within_the_tolerance(minilm_st, tmp_path):
    torch_emb = embeddings.Embedder(minilm_st, "torch", cache=False, batch_size=7)
    onnx_emb = embeddings.Embedder(_onnx(minilm_st, tmp_path), "onnx", cache=False, batch_size=7)
    ref, got = torch_emb.encode(NAMES), onnx_emb.encode(NAMES)
    assert got.shape == ref.shape == (len(NAMES), 384)
    assert np.abs(got - ref).max() <= onnx_encoder.TOLERANCE
    assert not np.allclose(got[0], got[1])  # not one vector for everything
    assert onnx_emb.model.device.type == "cpu"


def test_the_export_is_made_once_and_shared_by_lengths(minilm_st, tmp_path):
    first = _onnx(minilm_st, tmp_path)
    stamp = first.path.stat().st_mtime_ns
    second = _onnx(minilm_st, tmp_path)
    assert second.path == first.path and second.path.stat().st_mtime_ns == stamp
    assert [p.name for p in tmp_path.iterdir()] == [first.path.name]  # no temporary file left


def test_the_cut_is_the_models_max_seq_length(minilm_st, tmp_path):
    enc = _onnx(minilm_st, tmp_path)
    enc.max_seq_length = 4
    long_a, long_b = "alpha beta gamma delta epsilon", "alpha beta gamma delta zeta eta"
    a, b = enc.encode([long_a, long_b])
    assert np.allclose(a, b)  # both cut to the same first word pieces


def test_runtime_choice(monkeypatch):
    monkeypatch.delenv(onnx_encoder.RUNTIME_ENV, raising=False)
    monkeypatch.setattr(onnx_encoder, "_cuda_available", lambda: False)
    monkeypatch.setattr(onnx_encoder, "available", lambda: True)
    assert onnx_encoder.choose_runtime(None, None) == "onnx"
    assert onnx_encoder.choose_runtime("torch", None) == "torch"
    monkeypatch.setenv(onnx_encoder.RUNTIME_ENV, "torch")
    assert onnx_encoder.choose_runtime(None, None) == "torch"
    monkeypatch.setattr(onnx_encoder, "available", lambda: False)
    monkeypatch.delenv(onnx_encoder.RUNTIME_ENV)
    assert onnx_encoder.choose_runtime(None, "cpu") == "torch"  # auto without onnxruntime installed
    assert onnx_encoder.choose_runtime("auto", "cuda") == "torch"
    with pytest.raises(ConfigError, match="CPU only"):
        onnx_encoder.choose_runtime("onnx", "cuda")
    monkeypatch.setenv(onnx_encoder.RUNTIME_ENV, "tensorrt")
    with pytest.raises(ConfigError, match="KGRAG_EMBED_RUNTIME"):
        onnx_encoder.choose_runtime(None, None)
    with pytest.raises(ConfigError, match="runtime"):
        embeddings.load_embedder("minilm", runtime="fast")


def test_a_pipeline_it_cannot_run_is_refused_with_the_fix():
    class Transformer: ...

    class Pooling:
        def get_config_dict(self):
            return {"pooling_mode": "max"}

    class Dense: ...

    with pytest.raises(ConfigError, match="KGRAG_EMBED_RUNTIME=torch"):
        onnx_encoder._modules([Transformer(), Pooling(), Dense()])
    with pytest.raises(ConfigError, match="not 'max'"):
        onnx_encoder._modules([Transformer(), Pooling()])


def test_pooling_mode_across_sentence_transformers_versions():
    class New:
        def get_config_dict(self):
            return {"pooling_mode": ["mean"]}

    class Old:
        def get_config_dict(self):
            return {"pooling_mode_cls_token": True, "pooling_mode_mean_tokens": False}

    assert onnx_encoder._pooling_mode(New()) == "mean"
    assert onnx_encoder._pooling_mode(Old()) == "cls"


def test_a_cache_folder_it_cannot_write_is_one_line_naming_kgrag_cache_dir(minilm_st, tmp_path, monkeypatch):
    import errno

    from kgrag_utils.errors import StorageError

    def full(*a, **k):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(onnx_encoder.os, "replace", full)
    with pytest.raises(StorageError, match="cannot write .*KGRAG_CACHE_DIR"):
        _onnx(minilm_st, tmp_path / "onnx")
    assert not [p for p in (tmp_path / "onnx").iterdir()]  # no half-written export left behind
