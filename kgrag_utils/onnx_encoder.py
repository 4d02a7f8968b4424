"""A sentence-transformers model run by ONNX Runtime on the CPU: the same vectors, about 1.4x the names per second.

Measured on this project's 2-core machine (`benchmarks/embed_first_use.py --onnx`): the packaged
MiniLM embeds MetaQA's names at about 700 names/s on ONNX Runtime against about 500 on torch, and the vectors of
the two differ by at most a few 1e-7 per component (unit vectors). `TOLERANCE` is the difference this project
accepts as "the same vectors", so both runtimes share one vector cache.

How: the model's transformer is exported once with `torch.onnx.export` (dynamic batch and length) into the
cache (`cache/onnx/`, keyed by the model's folder and its weight files), then ONNX Runtime runs it; the
tokenizer, the cut at `max_seq_length` and the pooling are the sentence-transformers model's own settings.
Supported: a Transformer module followed by a mean or CLS Pooling (and optionally Normalize): every model this
project ships or documents. Anything else is refused in one line naming the fix (`KGRAG_EMBED_RUNTIME=torch`).
"""

from __future__ import annotations

import hashlib
import os
import uuid
import warnings
from pathlib import Path
from typing import Any

import numpy as np

from .errors import ConfigError, MissingDependencyError, StorageError, storage_errno, storage_message

RUNTIME_ENV = "KGRAG_EMBED_RUNTIME"
RUNTIMES = ("auto", "torch", "onnx")
DEFAULT_RUNTIME = "auto"
TOLERANCE = 1e-5  # largest absolute difference of any component of a unit vector counted as the same vector
_POOLINGS = ("mean", "cls")


def available() -> bool:
    """True when ONNX Runtime (to run) and onnx (to export) are importable."""
    import importlib.util

    return all(importlib.util.find_spec(m) is not None for m in ("onnxruntime", "onnx"))


def choose_runtime(runtime: str | None, device: str | None) -> str:
    """"torch" or "onnx" for a requested runtime (None: ``KGRAG_EMBED_RUNTIME``, else the default "auto")."""
    asked = (runtime or os.environ.get(RUNTIME_ENV, "").strip() or DEFAULT_RUNTIME).lower()
    if asked not in RUNTIMES:
        raise ConfigError(f"embedding runtime {asked!r} is not one of {RUNTIMES}: set {RUNTIME_ENV} (or runtime=) to one of them.")
    on_cpu = device in (None, "cpu") and not _cuda_available()
    if asked == "onnx" and not on_cpu:
        raise ConfigError(f"the ONNX embedding runtime runs on the CPU only (device {device or 'cuda'}): "
                          f"set {RUNTIME_ENV}=torch, or device='cpu'.")
    if asked == "auto":
        return "onnx" if on_cpu and available() else "torch"
    return asked


def _cuda_available() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return bool(torch.cuda.is_available())


def _modules(st_model: Any) -> tuple[Any, str]:
    """(the Transformer module, its pooling "mean" | "cls"), or a ConfigError for another pipeline."""
    mods = list(st_model)
    names = [type(m).__name__ for m in mods]
    fix = "set KGRAG_EMBED_RUNTIME=torch to encode with torch."
    if len(mods) < 2 or names[0] != "Transformer" or names[1] != "Pooling" or any(n != "Normalize" for n in names[2:]):
        raise ConfigError(f"the ONNX runtime supports Transformer + Pooling (+ Normalize) models, not {names}: {fix}")
    mode = _pooling_mode(mods[1])
    if mode not in _POOLINGS:
        raise ConfigError(f"the ONNX runtime supports {' or '.join(_POOLINGS)} pooling, not {mode!r}: {fix}")
    return mods[0], mode


def _pooling_mode(pooling: Any) -> str:
    """The Pooling module's one mode ("mean", "cls", ...) across sentence-transformers versions; "" if several."""
    config = pooling.get_config_dict() if hasattr(pooling, "get_config_dict") else {}
    mode = config.get("pooling_mode")
    if isinstance(mode, (list, tuple)):
        mode = mode[0] if len(mode) == 1 else ""
    if mode is None:  # older versions: one boolean per mode
        on = [k[len("pooling_mode_"):] for k, v in config.items() if k.startswith("pooling_mode_") and v is True]
        mode = {"mean_tokens": "mean", "cls_token": "cls"}.get(on[0], on[0]) if len(on) == 1 else ""
    return str(getattr(mode, "value", mode))


def _weights_key(model_id: str, source: str | None) -> str:
    """A short hash of the model's folder (else its id) and its files' sizes and times: a new version exports
    again, while the same weights read at another length (``minilm@512``) share one export."""
    h = hashlib.sha256((source or model_id).encode())
    if source and Path(source).is_dir():
        for f in sorted(Path(source).rglob("*")):
            if f.is_file() and f.suffix in (".safetensors", ".bin", ".json"):
                st = f.stat()
                h.update(f"{f.relative_to(source)}:{st.st_size}:{int(st.st_mtime)}".encode())
    return h.hexdigest()[:16]


def _export(transformer: Any, tokenizer: Any, path: Path) -> tuple[str, ...]:
    """Export the transformer to `path` (atomically); returns its input names."""
    import torch

    probe = tokenizer(["a probe", "a second, longer probe text"], padding=True, return_tensors="pt")
    inputs = tuple(k for k in ("input_ids", "attention_mask", "token_type_ids") if k in probe)
    auto = transformer.auto_model.eval()

    class _Hidden(torch.nn.Module):  # keyword arguments: the exporter passes positionally
        def __init__(self, model):
            super().__init__()
            self.model = model

        def forward(self, *args):
            return self.model(**dict(zip(inputs, args))).last_hidden_state

    tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex}.tmp")
    axes = {k: {0: "batch", 1: "length"} for k in (*inputs, "hidden")}
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with torch.no_grad(), warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the exporter's tracer warnings are about code paths MiniLM does not take
            torch.onnx.export(_Hidden(auto), tuple(probe[k] for k in inputs), str(tmp), input_names=list(inputs),
                              output_names=["hidden"], dynamic_axes=axes, opset_version=17, dynamo=False)
        os.replace(tmp, path)
    except OSError as exc:  # a full, read-only or forbidden cache folder: one line naming it and the fix
        if storage_errno(exc):
            raise StorageError(storage_message(exc, path.parent, "KGRAG_CACHE_DIR")) from exc
        raise
    finally:
        tmp.unlink(missing_ok=True)
    return inputs


class OnnxSentenceEncoder:
    """`encode(texts, batch_size=...)` like a SentenceTransformer, run by ONNX Runtime."""

    def __init__(self, st_model: Any, model_id: str, source: str | None, folder: Path, threads: int, spin: bool):
        if not available():
            raise MissingDependencyError("the ONNX embedding runtime needs onnxruntime and onnx: run "
                                         "`pip install onnxruntime onnx`, or set KGRAG_EMBED_RUNTIME=torch.")
        import onnxruntime as ort

        transformer, self.pooling = _modules(st_model)
        self.tokenizer = st_model.tokenizer
        self.max_seq_length = int(st_model.max_seq_length)
        dim = getattr(st_model, "get_embedding_dimension", None) or st_model.get_sentence_embedding_dimension
        self._dim = int(dim())
        path = folder / f"{_weights_key(model_id, source)}.onnx"
        probe = self.tokenizer(["probe"], return_tensors="np")
        self.inputs = tuple(k for k in ("input_ids", "attention_mask", "token_type_ids") if k in probe)
        if not path.is_file():
            self.inputs = _export(transformer, self.tokenizer, path)
        options = ort.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        if not spin:  # a busy machine: ONNX Runtime's workers sleep instead of spinning (see threads.py)
            options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        self.session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
        self.path = path

    @property
    def device(self):
        """Where it runs, as a sentence-transformers model says it: always the CPU."""
        import torch

        return torch.device("cpu")

    def get_embedding_dimension(self) -> int:
        return self._dim

    def encode(self, texts: list[str], batch_size: int = 64, **_: Any) -> np.ndarray:
        out = np.empty((len(texts), self._dim), dtype=np.float32)
        for start in range(0, len(texts), batch_size):
            chunk = texts[start:start + batch_size]
            enc = self.tokenizer(chunk, padding=True, truncation=True, max_length=self.max_seq_length, return_tensors="np")
            feed = {k: enc[k].astype(np.int64) for k in self.inputs}
            hidden = self.session.run(None, feed)[0]
            if self.pooling == "cls":
                pooled = hidden[:, 0]
            else:
                mask = enc["attention_mask"][..., None].astype(np.float32)
                pooled = (hidden * mask).sum(1) / np.clip(mask.sum(1), 1e-9, None)
            out[start:start + len(chunk)] = pooled
        return out
