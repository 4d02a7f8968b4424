"""benchmarks/gpu_wheels.py on small hand-made wheels: the bitsandbytes slimming and the closure check."""

from __future__ import annotations

import base64
import csv
import hashlib
import io
import zipfile
from pathlib import Path

from stand_ins import benchmark_module


def _module():
    return benchmark_module("gpu_wheels")


def _wheel(folder: Path, name: str, version: str, files: dict[str, bytes], requires=(), tag="py3-none-any") -> Path:
    path = folder / f"{name}-{version}-{tag}.whl"
    info = f"{name}-{version}.dist-info"
    meta = f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n" + "".join(f"Requires-Dist: {r}\n" for r in requires)
    with zipfile.ZipFile(path, "w") as z:
        for n, data in {**files, f"{info}/METADATA": meta.encode(), f"{info}/WHEEL": b"Wheel-Version: 1.0\n",
                        f"{info}/RECORD": b""}.items():
            z.writestr(n, data)
    return path


def test_slimmed_bitsandbytes_keeps_cpu_and_cuda13_libraries_with_a_valid_record(tmp_path):
    gw = _module()
    libs = {f"bitsandbytes/libbitsandbytes_{v}.so": v.encode() * 10 for v in
            ("cpu", "cuda118", "cuda128", "cuda130", "cuda132", "rocm64", "xpu2026")}
    _wheel(tmp_path, "bitsandbytes", "0.50.2", {"bitsandbytes/__init__.py": b"x = 1\n", **libs},
           tag="py3-none-manylinux_2_24_x86_64")
    out = gw.slim_bitsandbytes(tmp_path)
    assert out.name == "bitsandbytes-0.50.2-1slim-py3-none-manylinux_2_24_x86_64.whl"
    assert [p.name for p in tmp_path.glob("*.whl")] == [out.name]  # the original is replaced
    with zipfile.ZipFile(out) as z:
        names = set(z.namelist())
        kept = {n.rsplit("/", 1)[-1] for n in names if n.endswith(".so")}
        assert kept == {"libbitsandbytes_cpu.so", "libbitsandbytes_cuda128.so", "libbitsandbytes_cuda130.so",
                        "libbitsandbytes_cuda132.so"}
        assert b"Build: 1slim" in z.read("bitsandbytes-0.50.2.dist-info/WHEEL")
        rows = list(csv.reader(io.StringIO(z.read("bitsandbytes-0.50.2.dist-info/RECORD").decode())))
        listed = {r[0] for r in rows}
        assert listed == names
        for name, digest, size in rows:
            if digest:
                data = z.read(name)
                expected = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
                assert digest == f"sha256={expected}" and int(size) == len(data)
    assert gw.slim_bitsandbytes(tmp_path) == out  # idempotent


def test_closure_check_evaluates_markers_for_python_312_and_knows_the_device_packages(tmp_path):
    gw = _module()
    _wheel(tmp_path, "papermill", "2.7.0", {}, requires=[
        'aiohttp>=3.9; python_version == "3.12"', 'tomli; python_version < "3.11"', "pyyaml", "nbformat>=5.2",
        'pytest; extra == "test"'])
    _wheel(tmp_path, "nbformat", "5.1.0", {})
    problems = gw.check_closure(tmp_path)
    assert any("aiohttp" in p for p in problems)  # needed on 3.12 (the machine this build runs on may differ)
    assert any("nbformat>=5.2" in p and "5.1.0" in p for p in problems)  # present but too old
    assert not any("tomli" in p or "pyyaml" in p or "pytest" in p for p in problems)
    assert len(problems) == 2
