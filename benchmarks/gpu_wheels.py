"""Prepare the wheels the GPU check needs on the offline GPU machine, and check what one call carries.

    python benchmarks/gpu_wheels.py               # download benchmarks/gpu_wheels.txt into .gpu_wheels/, slim, check
    python benchmarks/gpu_wheels.py --check-only  # only the closure and size checks of what is there

The list (the closure, pinned) is downloaded for the GPU machine (Python 3.12, manylinux x86_64, `--no-deps`).
bitsandbytes' wheel is rebuilt with only its CPU and CUDA 12.8 / 13.0 / 13.2 libraries, its RECORD rewritten and a
build tag `1slim` added (pip installs it as the same version); nothing else is modified. Exit 1 when a check fails:
every `Requires-Dist` (markers evaluated for Python 3.12 on Linux x86_64) is met by a wheel in the folder or by a
package the GPU machine has (`DEVICE_HAS`), and the tree plus the folder fit the 64 MiB a call carries (docs/GPU.md).
"""

from __future__ import annotations

import argparse
import base64
import csv
import hashlib
import io
import re
import subprocess
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LIST = ROOT / "benchmarks" / "gpu_wheels.txt"
FOLDER = ROOT / ".gpu_wheels"
CARRY_LIMIT = 64 * 2**20
PLATFORMS = ("manylinux2014_x86_64", "manylinux_2_17_x86_64", "manylinux_2_24_x86_64", "manylinux_2_27_x86_64",
             "manylinux_2_28_x86_64", "manylinux_2_5_x86_64", "manylinux1_x86_64", "manylinux2010_x86_64")
#: bitsandbytes native libraries kept (torch on the GPU machine is a CUDA 13 build; 12.8 is a fallback)
BNB_KEEP = ("libbitsandbytes_cpu.so", "libbitsandbytes_cuda128.so", "libbitsandbytes_cuda130.so",
            "libbitsandbytes_cuda132.so")
#: installed on the GPU machine (the issue's list), so not shipped
DEVICE_HAS = ("torch", "transformers", "accelerate", "sentence-transformers", "numpy", "pandas", "scipy", "networkx",
              "matplotlib", "seaborn", "scikit-learn", "pyarrow", "tqdm", "pyyaml", "pytest")
ENV = {"python_version": "3.12", "python_full_version": "3.12.0", "sys_platform": "linux", "platform_system": "Linux",
       "platform_machine": "x86_64", "os_name": "posix", "implementation_name": "cpython",
       "platform_python_implementation": "CPython", "extra": ""}


def canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def read_list(path: Path = LIST) -> list[str]:
    """The pinned specs of the list, comments and blank lines left out."""
    return [spec for line in path.read_text().splitlines() if (spec := line.split("#", 1)[0].strip())]


def download(specs: list[str], folder: Path) -> None:
    folder.mkdir(exist_ok=True)
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary", ":all:", "--python-version", "3.12",
           "--implementation", "cp", "--abi", "cp312", "--abi", "abi3", "--abi", "none", "-d", str(folder)]
    for p in PLATFORMS:
        cmd += ["--platform", p]
    subprocess.run(cmd + specs, check=True)


def _record_hash(data: bytes) -> str:
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def slim_bitsandbytes(folder: Path) -> Path | None:
    """Rewrite the bitsandbytes wheel without the native libraries the GPU machine cannot use."""
    originals = [w for w in folder.glob("bitsandbytes-*.whl") if "-1slim-" not in w.name]
    if not originals:
        return next(iter(folder.glob("bitsandbytes-*-1slim-*.whl")), None)
    src = originals[0]
    name, version, *tags = src.name[:-4].split("-")
    dst = folder / f"{name}-{version}-1slim-{'-'.join(tags)}.whl"
    dist_info = f"{name}-{version}.dist-info"
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dst, "w", zipfile.ZIP_DEFLATED) as zout:
        kept_rows = []
        for item in zin.infolist():
            base = item.filename.rsplit("/", 1)[-1]
            if item.filename == f"{dist_info}/RECORD":
                continue
            if base.startswith("libbitsandbytes_") and base not in BNB_KEEP:
                continue
            data = zin.read(item)
            if item.filename == f"{dist_info}/WHEEL":
                data = re.sub(rb"(?m)^Build: .*\n", b"", data) + b"Build: 1slim\n"
            zout.writestr(item, data)
            kept_rows.append([item.filename, _record_hash(data), str(len(data))])
        buf = io.StringIO()
        csv.writer(buf, lineterminator="\n").writerows(kept_rows + [[f"{dist_info}/RECORD", "", ""]])
        zout.writestr(f"{dist_info}/RECORD", buf.getvalue())
    src.unlink()
    return dst


def _metadata(wheel: Path) -> tuple[str, list[str]]:
    with zipfile.ZipFile(wheel) as z:
        meta = next(n for n in z.namelist() if n.endswith(".dist-info/METADATA"))
        text = z.read(meta).decode("utf-8", "replace")
    header = text.split("\n\n", 1)[0]
    name = re.search(r"(?m)^Name: (.+)$", header).group(1).strip()
    return name, [m.strip() for m in re.findall(r"(?m)^Requires-Dist: (.+)$", header)]


def check_closure(folder: Path) -> list[str]:
    """Requirements of the wheels that neither the folder nor the GPU machine meets."""
    from packaging.requirements import Requirement
    from packaging.utils import parse_wheel_filename

    have = {}
    for w in folder.glob("*.whl"):
        n, v, _, _ = parse_wheel_filename(w.name)
        have[canonical(str(n))] = v
    missing = []
    for w in sorted(folder.glob("*.whl")):
        owner, reqs = _metadata(w)
        for line in reqs:
            req = Requirement(line)
            if req.marker is not None and not req.marker.evaluate(ENV):
                continue
            key = canonical(req.name)
            if key in have:
                if req.specifier and not req.specifier.contains(have[key], prereleases=True):
                    missing.append(f"{owner} needs {line}, the folder has {key} {have[key]}")
            elif key not in DEVICE_HAS:
                missing.append(f"{owner} needs {line}: neither in the folder nor on the GPU machine")
    return missing


def carried_bytes(folder: Path) -> dict:
    """What one device call carries: the tree's tracked and non-ignored files, plus the folder."""
    out = subprocess.run(["git", "-C", str(ROOT), "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                         capture_output=True, check=True).stdout
    tree = sum((ROOT / p).stat().st_size for p in out.decode().split("\0") if p and (ROOT / p).is_file())
    wheels = sum(f.stat().st_size for f in folder.rglob("*") if f.is_file()) if folder.exists() else 0
    return {"tree_bytes": tree, "wheels_bytes": wheels, "total_bytes": tree + wheels, "limit_bytes": CARRY_LIMIT}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--check-only", action="store_true", help="no download: check the folder as it is")
    ap.add_argument("--folder", default=str(FOLDER))
    args = ap.parse_args(argv)
    folder = Path(args.folder)
    specs = read_list()
    if not args.check_only:
        download(specs, folder)
        slim = slim_bitsandbytes(folder)
        print(f"[gpu_wheels] bitsandbytes slimmed: {slim.name if slim else 'not found'}")
    wanted = {canonical(s.split("==")[0]) for s in specs}
    present = {canonical(w.name.split("-")[0]) for w in folder.glob("*.whl")}
    problems = [f"missing wheel for {n}" for n in sorted(wanted - present)]
    problems += [f"unlisted wheel {n}" for n in sorted(present - wanted)]
    problems += check_closure(folder)
    size = carried_bytes(folder)
    for w in sorted(folder.glob("*.whl"), key=lambda p: -p.stat().st_size)[:6]:
        print(f"[gpu_wheels]   {w.stat().st_size / 2**20:6.2f} MiB  {w.name}")
    print(f"[gpu_wheels] {len(present)} wheels {size['wheels_bytes'] / 2**20:.1f} MiB + tree "
          f"{size['tree_bytes'] / 2**20:.1f} MiB = {size['total_bytes'] / 2**20:.1f} MiB of {CARRY_LIMIT / 2**20:.0f} MiB")
    if size["total_bytes"] > CARRY_LIMIT:
        problems.append(f"a call would carry {size['total_bytes'] / 2**20:.1f} MiB, over the 64 MiB limit")
    for p in problems:
        print(f"[gpu_wheels] PROBLEM: {p}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
