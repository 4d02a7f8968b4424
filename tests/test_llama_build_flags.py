"""`make setup` compiles llama.cpp without AMX unless asked (Makefile LLAMA_AMX): on a virtual machine whose CPU
reports AMX, ggml's AMX matrix multiply died of a general protection fault on the first prompt."""

import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _setup_commands(tmp_path, *overrides: str) -> str:
    if shutil.which("make") is None:
        pytest.skip("make is not installed")
    out = subprocess.run(["make", "-n", "-B", "setup", f"VENV={tmp_path / 'venv'}", *overrides], cwd=ROOT,
                         capture_output=True, text=True, check=True)
    return next(line for line in out.stdout.splitlines() if "CMAKE_ARGS=" in line)


def test_llama_cpp_is_built_without_amx_by_default(tmp_path):
    line = _setup_commands(tmp_path)
    for flag in ("-mno-amx-tile", "-mno-amx-int8", "-mno-amx-bf16"):  # int8 and bf16 are not implied off by tile
        assert line.count(flag) == 2, line  # in the C and the C++ flags
    assert "llama_cpp_lean.cmake" in line


def test_llama_amx_1_keeps_amx(tmp_path):
    assert "mno-amx" not in _setup_commands(tmp_path, "LLAMA_AMX=1")
