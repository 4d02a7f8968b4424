"""Does environment.yml's pip part resolve for a GPU machine? A dry run against PyPI, from any machine.

    python benchmarks/gpu_env_resolve.py --out benchmarks/results/gpu_env_resolve.json
    python benchmarks/gpu_env_resolve.py --list-bitsandbytes-cuda      # also download bitsandbytes' wheel

The pip section of environment.yml, `-e .[extras]` expanded into this project's requirements, goes to `pip install
--dry-run --report` for Linux x86_64 and the environment's Python, binary wheels only, PyPI alone (`--isolated`).
Nothing is installed. Checked: torch is the pinned CUDA build, one FAISS distribution only, transformers >= 5; the
JSON lists what pip would install and each package's CUDA major version (`--list-bitsandbytes-cuda`: the CUDA
versions bitsandbytes' binaries were built for). Not checked: the conda part, the NVIDIA driver, a GPU run.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
import tomllib
import zipfile
from datetime import datetime, timezone
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # bench_common, also when a test imports this file
from bench_common import ROOT, write  # noqa: E402

# The GPU machine: manylinux wheels of any glibc up to 2.28 (torch 2.13 wheels need 2.28), x86_64.
PLATFORMS = [f"manylinux_2_{v}_x86_64" for v in range(28, 16, -1)] + ["manylinux2014_x86_64", "linux_x86_64"]


def _name(req: str) -> str:
    return re.split(r"[\s\[<>=!~;]", req.strip(), maxsplit=1)[0].lower().replace("_", "-")


def project_requirements(extras: list[str]) -> list[str]:
    """This project's dependencies plus the given extras, extras that name the project expanded in place."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    own, optional = _name(project["name"]), project["optional-dependencies"]
    out, seen = list(project["dependencies"]), set()

    def add(extra: str) -> None:
        if extra in seen:
            return
        if extra not in optional:
            raise SystemExit(f"environment.yml asks for extra {extra!r}, which pyproject.toml does not define")
        seen.add(extra)
        for req in optional[extra]:
            if _name(req) == own:
                for e in re.search(r"\[(.*?)\]", req).group(1).split(","):
                    add(e.strip())
            else:
                out.append(req)

    for e in extras:
        add(e)
    return list(dict.fromkeys(out))


def environment_pip_section(path: Path) -> tuple[str, list[str]]:
    """(python version, pip requirement lines) of an environment.yml; `-e .[x,y]` expanded."""
    import yaml

    env = yaml.safe_load(path.read_text(encoding="utf-8"))
    python, pip_lines = None, []
    for dep in env["dependencies"]:
        if isinstance(dep, str) and dep.startswith("python"):
            python = re.sub(r"^python\s*=*\s*", "", dep).strip()
        elif isinstance(dep, dict) and "pip" in dep:
            pip_lines = [str(x) for x in dep["pip"]]
    reqs = []
    for line in pip_lines:
        m = re.match(r"^-e\s+\.(?:\[(.*)\])?$", line.strip())
        if m:
            reqs += project_requirements([e.strip() for e in (m.group(1) or "").split(",") if e.strip()])
        else:
            reqs.append(line)
    return python, reqs


def cuda_major(meta: dict) -> str | None:
    """The CUDA major version a package links against, from its name or its requirements."""
    name = meta["name"].lower()
    m = re.search(r"-cu(\d+)$", name)
    if m:
        return m.group(1)
    for d in meta.get("requires_dist") or []:
        if "extra ==" in d:
            continue
        m = re.match(r"cuda-toolkit.*?==\s*(\d+)\.", d) or re.match(r"nvidia-\S+-cu(\d+)", d)
        if m:
            return m.group(1)
    return None


def resolve(python: str, reqs: list[str], workdir: Path) -> dict:
    req_file, report = workdir / "requirements.txt", workdir / "report.json"
    req_file.write_text("\n".join(reqs) + "\n", encoding="utf-8")
    cmd = [sys.executable, "-m", "pip", "--isolated", "install", "--dry-run", "--ignore-installed", "--quiet",
           "--report", str(report), "--only-binary=:all:", "--python-version", python, "--implementation", "cp",
           "--abi", f"cp{python.replace('.', '')}", *[a for p in PLATFORMS for a in ("--platform", p)], "-r", str(req_file)]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        return {"ok": False, "command": cmd, "error": (proc.stderr or proc.stdout)[-3000:]}
    items = json.loads(report.read_text(encoding="utf-8"))["install"]
    return {"ok": True, "command": cmd, "install": [
        {"name": it["metadata"]["name"], "version": it["metadata"]["version"],
         "file": it["download_info"]["url"].rsplit("/", 1)[-1], "cuda": cuda_major(it["metadata"]),
         "requires_faiss": [d for d in it["metadata"].get("requires_dist") or []
                            if d.lower().startswith("faiss") and "extra ==" not in d]} for it in items]}


def checks(install: list[dict], reqs: list[str]) -> dict:
    by = {p["name"].lower().replace("_", "-"): p for p in install}
    torch_pin = next((r for r in reqs if _name(r) == "torch"), None)
    faiss = sorted(n for n in by if n.startswith("faiss"))
    tf = by.get("transformers", {}).get("version", "0")
    return {
        "torch": by.get("torch", {}).get("version"), "torch_pin": torch_pin, "torch_cuda": by.get("torch", {}).get("cuda"),
        "torch_is_pinned_version": torch_pin is not None and torch_pin.split("==")[-1] == by.get("torch", {}).get("version"),
        "faiss_distributions": faiss, "one_faiss": len(faiss) == 1,
        "faiss_required_by": {p["name"]: p["requires_faiss"] for p in install if p["requires_faiss"]},
        "transformers": tf, "transformers_5_or_newer": int(tf.split(".")[0]) >= 5,
        "bitsandbytes": by.get("bitsandbytes", {}).get("version"),
        "cuda_majors": {p["name"]: p["cuda"] for p in install if p["cuda"]},
    }


def bitsandbytes_cuda(install: list[dict], workdir: Path) -> list[str]:
    bnb = next(p for p in install if p["name"].lower() == "bitsandbytes")
    subprocess.run([sys.executable, "-m", "pip", "--isolated", "download", "--no-deps", "--only-binary=:all:", "--quiet",
                    *[a for p in PLATFORMS for a in ("--platform", p)], "-d", str(workdir),
                    f"bitsandbytes=={bnb['version']}"], check=True)
    wheel = next(workdir.glob("bitsandbytes-*.whl"))
    with zipfile.ZipFile(wheel) as z:
        return sorted({m.group(1) for n in z.namelist() for m in [re.search(r"libbitsandbytes_(cuda\d+)", n)] if m})


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--environment", default=str(ROOT / "environment.yml"))
    ap.add_argument("--out", default="benchmarks/results/gpu_env_resolve.json")
    ap.add_argument("--list-bitsandbytes-cuda", action="store_true")
    args = ap.parse_args(argv)
    python, reqs = environment_pip_section(Path(args.environment))
    with tempfile.TemporaryDirectory() as tmp:
        res = resolve(python, reqs, Path(tmp))
        result = {"benchmark": "gpu_env_resolve", "when": datetime.now(timezone.utc).isoformat(timespec="seconds"),
                  "environment": Path(args.environment).name, "python": python, "platforms": PLATFORMS,
                  "requirements": reqs, **res}
        if res["ok"]:
            result["checks"] = checks(res["install"], reqs)
            if args.list_bitsandbytes_cuda:
                result["checks"]["bitsandbytes_cuda_binaries"] = bitsandbytes_cuda(res["install"], Path(tmp))
    write(args.out, result)
    checked = result.get("checks") or {}
    print(json.dumps(checked or {"error": result.get("error")}, indent=1))
    return 0 if all(checked.get(k) for k in ("one_faiss", "torch_is_pinned_version", "transformers_5_or_newer")) else 1


if __name__ == "__main__":
    raise SystemExit(main())
