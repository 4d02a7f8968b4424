"""Issue 27, cases 3 and 4: every file a loader reads is pinned, and an acceptance survives other processes.

Case 4 runs real processes that share one digest store: one has looked at a file before another
accepts a change to it on purpose, and then writes its own store entries. Case 3 checks the pins
against the real copies (skipped where they are absent, like the other real-data tests).
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from kgrag_utils import integrity
from kgrag_utils.errors import IntegrityError

ROOT = Path(__file__).resolve().parents[1]
WAIT_S = 300  # a bound on waiting for another process, not a measurement


def _env() -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    return env


def _python(code: str, *args: str, **kw):
    return subprocess.Popen([sys.executable, "-c", textwrap.dedent(code), *map(str, args)], env=_env(), **kw)


_LOOKS_THEN_WRITES = """
    import sys, time
    from pathlib import Path
    from kgrag_utils import integrity
    f, g, ready, go = map(Path, sys.argv[1:5])
    integrity.verify_file(f)                      # this process has seen f as it was
    ready.write_text("")
    deadline = time.monotonic() + 300
    while not go.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    integrity.verify_file(g)                      # ... and now writes a store entry of its own
"""


def test_an_acceptance_is_not_undone_by_another_running_process(tmp_path):
    f, g = tmp_path / "kb.txt", tmp_path / "other.txt"
    f.write_text("a|r|b\n")
    g.write_text("x\n")
    ready, go = tmp_path / "ready", tmp_path / "go"
    other = _python(_LOOKS_THEN_WRITES, f, g, ready, go)
    try:
        deadline = time.monotonic() + WAIT_S
        while not ready.exists():
            assert other.poll() is None, "the other process ended early"
            assert time.monotonic() < deadline
            time.sleep(0.05)
        f.write_text("a|r|b\nc|r|d\n")  # changed on purpose ...
        accepted = _python("import sys; from kgrag_utils import integrity; integrity.accept(sys.argv[1])", f)
        assert accepted.wait(timeout=WAIT_S) == 0  # ... and accepted (`kgrag data verify NAME --accept`)
        go.write_text("")
        assert other.wait(timeout=WAIT_S) == 0
    finally:
        if other.poll() is None:
            other.kill()
    check = _python("import sys; from kgrag_utils import integrity; integrity.verify_file(sys.argv[1])", f,
                    stderr=subprocess.PIPE, text=True)
    _, err = check.communicate(timeout=WAIT_S)
    assert check.returncode == 0, err  # the next run is not refused as "changed since first verified"


def test_a_running_process_sees_an_acceptance_made_elsewhere(tmp_path):
    f = tmp_path / "kb.txt"
    f.write_text("a\n")
    integrity.verify_file(f)
    f.write_text("a\nb\n")
    with pytest.raises(IntegrityError, match="changed since it was first verified"):
        integrity.verify_file(f)
    accepted = _python("import sys; from kgrag_utils import integrity; integrity.accept(sys.argv[1])", f)
    assert accepted.wait(timeout=WAIT_S) == 0
    integrity.verify_file(f)  # this process's memory of the old reference gives way to the store's


# ----------------------------------------------------------------------------- case 3: pins on the real copies
import json  # noqa: E402
import shutil  # noqa: E402

from kgrag_utils.datasets import load_dataset  # noqa: E402
from kgrag_utils.datasets.registry import get_spec  # noqa: E402
from kgrag_utils.datasets.sources import folder_pins  # noqa: E402

#: every real dataset of the documented copies, with the splits a run reads
REAL_LOADS = [("metaqa-1hop", "test"), ("metaqa-1hop", "dev"), ("metaqa-2hop", "test"), ("metaqa-2hop", "dev"),
              ("metaqa-3hop", "test"), ("metaqa-3hop", "dev"), ("pq-2hop", "test"), ("pq-3hop", "test"),
              ("clutrr", "train"), ("clutrr", "test"), ("hotpotqa", "all"), ("musique", "all"), ("2wiki", "all")]

_TRACE = """
    import json, sys
    from pathlib import Path
    data = Path(sys.argv[1]).resolve()
    opened = set()
    def hook(event, args):
        if event == "open" and isinstance(args[0], (str, bytes, Path)):
            p = Path(args[0].decode() if isinstance(args[0], bytes) else args[0])
            if p.is_absolute() and str(p).startswith(str(data)):
                opened.add(str(p))
    sys.addaudithook(hook)
    from kgrag_utils.datasets import load_dataset
    out = {}
    for name, split in json.loads(sys.argv[2]):
        opened.clear()
        load_dataset(name, split=split, limit=2)
        out[f"{name}/{split}"] = sorted(opened)
    print(json.dumps(out))
"""


def test_every_file_a_loader_reads_is_pinned(real_data, tmp_path):
    loads = [(n, s) for n, s in REAL_LOADS if (real_data / get_spec(n).folder).is_dir()]
    env = {**_env(), "KGRAG_DATA_DIR": str(real_data), "KGRAG_CACHE_DIR": str(tmp_path / "cache")}
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(_TRACE), str(real_data), json.dumps(loads)],
                          env=env, capture_output=True, text=True, timeout=1800)
    assert done.returncode == 0, done.stderr[-2000:]
    opened = json.loads(done.stdout.strip().splitlines()[-1])
    unpinned = []
    for load, paths in opened.items():
        folder = get_spec(load.split("/")[0]).folder
        pins = folder_pins(folder)
        for p in paths:
            rel = Path(p).relative_to((real_data / folder).resolve()).as_posix()
            if rel not in pins:
                unpinned.append(f"{load}: {folder}/{rel}")
    assert all(opened.values()) and not unpinned, unpinned


def test_the_real_copies_match_their_pins(real_data):
    for folder in sorted({get_spec(n).folder for n, _ in REAL_LOADS}):
        for rel, pin in folder_pins(folder).items():
            path = real_data / folder / rel
            if path.is_file():
                integrity.verify_file(path, pin, "refetch it")  # a fresh store (tests' own cache): pins only


def _copy(real: Path, dest: Path, rels: list[str]) -> None:
    for rel in rels:
        (dest / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(real / rel, dest / rel)  # a copy, not a link: the store keys files by real path


def test_a_kb_cut_at_a_line_boundary_is_refused(real_data, tmp_path, monkeypatch):
    kb = real_data / "MetaQA" / "kb_reconstructed.txt"
    if not kb.is_file():
        pytest.skip("the documented MetaQA copy (kb_reconstructed.txt) is absent")
    copy = tmp_path / "data" / "MetaQA"
    _copy(real_data / "MetaQA", copy, ["qa/2-hop/vanilla/qa_test.txt", "qa/2-hop/qa_test_qtype.txt"])
    lines = kb.read_bytes().split(b"\n")
    (copy / "kb_reconstructed.txt").write_bytes(b"\n".join(lines[: len(lines) // 2]) + b"\n")  # cut in half
    monkeypatch.setenv("KGRAG_DATA_DIR", str(tmp_path / "data"))
    with pytest.raises(IntegrityError, match=r"kb_reconstructed.txt has [\d,]+ bytes, not the 4,969,552"):
        load_dataset("metaqa-2hop", split="test", limit=2)
    done = subprocess.run([sys.executable, "-m", "kgrag_utils.cli", "data", "verify", "metaqa-2hop"],
                          env={**_env(), "KGRAG_DATA_DIR": str(tmp_path / "data")}, capture_output=True, text=True,
                          timeout=WAIT_S)
    assert done.returncode == 2 and "kb_reconstructed.txt" in done.stderr and "verified" not in done.stdout
