"""Issue 49: nothing lost, nothing run that should not run, round three (data pins, result files, odd records).

Real processes (`kgrag` as a subprocess, real kernels), real files and private copies of the real data under
the test's temporary folder; the tests that need the real copies skip where they are absent.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from kgrag_utils import records
from kgrag_utils.datasets import download, verify
from kgrag_utils.datasets.registry import get_spec
from kgrag_utils.errors import IntegrityError

from cli_process import ROOT, error_lines, kgrag

WAIT_S = 900  # a bound on one subprocess, not a measurement





# ----------------------------------------------------------------------------- N1, N19: a fetch accepts only what it wrote
@pytest.fixture
def metaqa_copy(real_data, tmp_path, monkeypatch):
    """A private copy of the real MetaQA folder as the data folder, with its own digest store."""
    if not (real_data / "MetaQA" / "kb_reconstructed.txt").is_file():
        pytest.skip("the documented MetaQA copy (kb_reconstructed.txt) is absent")
    data = tmp_path / "d"
    shutil.copytree(real_data / "MetaQA", data / "MetaQA")
    monkeypatch.setenv("KGRAG_DATA_DIR", str(data))
    monkeypatch.setenv("KGRAG_CACHE_DIR", str(tmp_path / "c"))
    return data / "MetaQA"


def _cut_half(path: Path) -> None:
    lines = path.read_bytes().splitlines(keepends=True)
    path.write_bytes(b"".join(lines[: len(lines) // 2]))


@pytest.mark.parametrize("damage", ["cut_kb", "edited_gold"])
def test_a_fetch_that_wrote_nothing_accepts_nothing(metaqa_copy, damage):
    if damage == "cut_kb":
        damaged = metaqa_copy / "kb_reconstructed.txt"
        _cut_half(damaged)
    else:
        damaged = metaqa_copy / "qa" / "1-hop" / "vanilla" / "qa_test.txt"
        text = damaged.read_text(encoding="utf-8").split("\n", 1)
        damaged.write_text(text[0].split("\t")[0] + "\tWRONG GOLD ANSWER\n" + text[1], encoding="utf-8")
    env = {k: os.environ[k] for k in ("KGRAG_DATA_DIR", "KGRAG_CACHE_DIR")}
    fetched = kgrag("data", "fetch", "metaqa", **env)  # the copy looks complete: nothing is downloaded
    lines = [ln for ln in fetched.stderr.splitlines() if ln.startswith("kgrag: error:")]
    assert fetched.returncode == 2 and len(lines) == 1, fetched.stdout + fetched.stderr
    assert str(damaged) in lines[0] and "kgrag data fetch metaqa --force" in lines[0]
    for name in ("metaqa-1hop", "metaqa-2hop"):  # and the pins still hold afterwards
        again = kgrag("data", "verify", name, **env)
        assert again.returncode == 2 and str(damaged) in again.stderr, again.stdout + again.stderr


def test_a_file_a_fetch_wrote_is_checked_against_its_pin_before_it_is_accepted(metaqa_copy):
    kb = metaqa_copy / "kb_reconstructed.txt"
    good = kb.read_bytes()
    _cut_half(kb)
    with pytest.raises(IntegrityError, match="kb_reconstructed.txt"):  # "written" by a fetch, but not the release
        download.accept_group("metaqa", {kb.resolve()})
    kb.write_bytes(good)
    qtype = metaqa_copy / "qa" / "1-hop" / "qa_test_qtype.txt"
    download.accept_group("metaqa", set())  # untouched files that match their pins pass ...
    assert verify.verify_dataset(get_spec("metaqa-1hop"))  # ... and nothing was accepted over a pin
    assert qtype in verify.verify_dataset(get_spec("metaqa-1hop"))


def test_the_not_aligned_message_names_the_fetch_that_fixes_it(metaqa_copy):
    from kgrag_utils.datasets import metaqa

    qtype = metaqa_copy / "qa" / "2-hop" / "qa_test_qtype.txt"
    qtype.write_text("\n".join(qtype.read_text().splitlines()[:-3]) + "\n")
    with pytest.raises(IntegrityError, match=r"not aligned; re-fetch MetaQA with `kgrag data fetch metaqa --force`"):
        metaqa.read_questions(metaqa_copy / "qa", 2, "test")


# ----------------------------------------------------------------------------- N2, N14: reproduce runs only benchmarks/
def _result_file(tmp_path: Path, argv) -> Path:
    data = json.loads((ROOT / "benchmarks/results/kgp_hotpotqa_baselines_n50.json").read_text(encoding="utf-8"))
    data["provenance"]["argv"] = argv
    path = tmp_path / "t.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


@pytest.mark.parametrize("where", ["absolute", "climbing", "link_out"])
def test_reproduce_runs_no_script_outside_the_checkouts_benchmarks(tmp_path, where):
    mark = tmp_path / "EVIL_RAN"
    evil = tmp_path / "evil.py"
    evil.write_text(f"open({str(mark)!r}, 'w').write('ran')\n")
    if where == "absolute":
        name = str(evil)
    elif where == "climbing":
        name = os.path.relpath(evil, ROOT)  # benchmarks/../../tmp/... style
        name = "benchmarks/" + os.path.relpath(evil, ROOT / "benchmarks")
    else:
        link = ROOT / "benchmarks" / f"zz_link_{os.getpid()}.py"
        link.symlink_to(evil)
        name = f"benchmarks/{link.name}"
    try:
        done = kgrag("reproduce", str(_result_file(tmp_path, [name, "--limit", "1"])), "--limit", "1")
    finally:
        if where == "link_out":
            link.unlink()
    lines = error_lines(done.stderr)
    assert done.returncode == 2 and len(lines) == 1 and "not a Python file under this checkout's benchmarks/" in lines[0]
    assert not mark.exists(), "the result file ran a script from outside benchmarks/"


@pytest.mark.parametrize("what", ["folder", "argv_int", "dev_zero", "long_name"])
def test_reproduce_refuses_what_is_not_a_result_file_in_one_line(tmp_path, what):
    target = {"folder": lambda: str(tmp_path), "argv_int": lambda: str(_result_file(tmp_path, [5])),
              "dev_zero": lambda: "/dev/zero", "long_name": lambda: "a" * 300}[what]()
    done = kgrag("reproduce", target, "--limit", "1")
    lines = error_lines(done.stderr)
    assert done.returncode == 2 and len(lines) == 1 and lines[0].startswith("kgrag: error:"), done.stderr[-2000:]
    assert len(lines[0]) < 400


# ----------------------------------------------------------------------------- N4: an id that cannot key an index
def test_a_list_or_dict_id_is_a_torn_line_for_every_reader(tmp_path):
    run = tmp_path / "results" / "idl"
    run.mkdir(parents=True)
    (run / records.RUN_FILE).write_text(json.dumps({"run_name": "idl", "status": "failed", "method": "quickstart",
                                                    "params": {"limit": 4}}))
    (run / records.EXAMPLES_FILE).write_text('{"id": "a", "x": 1}\n{"id": [1, 2]}\n{"id": {"k": 1}}\n{"id": "b"}\n')
    rows, torn = records.read_examples(run / records.EXAMPLES_FILE)
    assert [r["id"] for r in rows] == ["a", "b"] and torn == 2
    other = tmp_path / "results" / "weird"
    other.mkdir()
    (other / records.RUN_FILE).write_text(json.dumps({"run_name": "weird", "status": "ok", "params": ["not", "a", "map"]}))
    runs = records.load_runs(tmp_path / "results")
    by_name = dict(zip(runs["run_name"], runs["status"]))
    assert by_name == {"idl": "failed", "weird": "unreadable"}  # one odd record is its own row, not every reader's end
    from kgrag_utils.explore import open_run

    view = open_run("idl", tmp_path / "results")
    assert len(view) == 2 and view.torn_lines == 2


# ----------------------------------------------------------------------------- N3: a topic entity the KB lacks
def _tiny_metaqa(data: Path) -> None:
    """A MetaQA-format copy with three 1-hop questions; the first names a topic entity the KB does not hold."""
    root = data / "MetaQA"
    (root / "qa" / "1-hop" / "vanilla").mkdir(parents=True)
    (root / "kb_reconstructed.txt").write_text(
        "Heat|directed_by|Michael Mann\nAlien|directed_by|Ridley Scott\nAlien|starred_actors|Sigourney Weaver\n")
    (root / "qa" / "1-hop" / "vanilla" / "qa_test.txt").write_text(
        "who directed [Nowhere Film]\tSomeone\nwho directed [Heat]\tMichael Mann\nwho directed [Alien]\tRidley Scott\n")
    (root / "qa" / "1-hop" / "qa_test_qtype.txt").write_text("movie_to_director\n" * 3)


@pytest.mark.slow
def test_quickstart_records_a_question_whose_topic_entity_is_not_in_the_kb_and_goes_on(tmp_path):
    data, results = tmp_path / "d", tmp_path / "results"
    _tiny_metaqa(data)
    env = {"KGRAG_DATA_DIR": data, "KGRAG_RESULTS_DIR": results, "KGRAG_RUNS_DIR": tmp_path / "runs"}
    accepted = kgrag("data", "verify", "metaqa-1hop", "--accept", **env)  # a copy we mean to use
    assert accepted.returncode == 0, accepted.stderr
    done = kgrag("run", "00_quickstart", "-p", "dataset=metaqa-1hop", "-p", "llm_preset=fake", "-p", "limit=0",
                 "--run-name", "unknown-topic", **env)
    assert done.returncode == 0, done.stdout + done.stderr[-3000:]
    rows, torn = records.read_examples(results / "unknown-topic" / records.EXAMPLES_FILE)
    assert len(rows) == 3 and torn == 0  # every question recorded, the run finished
    missing = [r for r in rows if r.get("failure") == "unknown_entity"]
    assert len(missing) == 1 and "Nowhere Film" in missing[0]["error"] and missing[0]["hits@1"] == 0
    rec = records.read_run(results / "unknown-topic")
    assert rec["status"] == "ok" and rec["summary"]["n"] == 3 and rec["summary"]["n_failed"] >= 1


# ----------------------------------------------------------------------------- N10: servers that answer badly
_SERVER = r'''
import json, sys, time
from http.server import ThreadingHTTPServer, BaseHTTPRequestHandler
mode = sys.argv[1]
OK = json.dumps({"choices": [{"message": {"content": "Paris"}, "finish_reason": "stop"}],
                 "usage": {"prompt_tokens": 10, "completion_tokens": 1}}).encode()
BODY = {"ok": OK, "text": b"upstream connect error or disconnect/reset before headers",
        "garbage": b"<html>\x00\xff not json at all",
        "badjson_shape": json.dumps({"choices": [{"message": {"content": 42}}], "usage": {"prompt_tokens": "many"}}).encode(),
        "trickle": OK}[mode]
class H(BaseHTTPRequestHandler):
    def log_message(self, *a): pass
    def do_GET(self):
        data = json.dumps({"data": [{"id": "m"}]}).encode()
        self.send_response(200); self.send_header("Content-Length", str(len(data))); self.end_headers(); self.wfile.write(data)
    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.send_response(200); self.send_header("Content-Length", str(len(BODY))); self.end_headers()
        for i in range(0, len(BODY), 1 if mode == "trickle" else len(BODY)):
            self.wfile.write(BODY[i:i + (1 if mode == "trickle" else len(BODY))]); self.wfile.flush()
            if mode == "trickle": time.sleep(0.5)
srv = ThreadingHTTPServer(("127.0.0.1", 0), H)
print(srv.server_address[1], flush=True)
srv.serve_forever()
'''


@pytest.fixture
def bad_server(tmp_path):
    procs = []

    def start(mode: str) -> str:
        script = tmp_path / "srv.py"
        script.write_text(_SERVER)
        proc = subprocess.Popen([sys.executable, str(script), mode], stdout=subprocess.PIPE, text=True)
        procs.append(proc)
        return f"http://127.0.0.1:{proc.stdout.readline().strip()}/v1"

    yield start
    for proc in procs:
        proc.kill()
        proc.wait()


@pytest.mark.parametrize("mode", ["text", "garbage", "badjson_shape", "trickle"])
def test_an_openai_server_that_answers_badly_is_one_line_naming_it(bad_server, tmp_path, monkeypatch, mode):
    from kgrag_utils.errors import BackendUnavailableError
    from kgrag_utils.llm import load_llm
    from kgrag_utils.llm.cache import ResponseCache

    monkeypatch.setenv("KGRAG_OPENAI_TIMEOUT", "3")  # a trickle of 150 bytes, one per 0.5 s, outlasts it
    url = bad_server(mode)
    llm = load_llm("qwen2.5-coder-0.5b", backend="openai", base_url=url, model="m", max_retries=0,
                   cache=ResponseCache(tmp_path / "c.sqlite"))
    with pytest.raises(BackendUnavailableError) as info:
        llm.generate(["What is the capital of France?"], max_new_tokens=4)
    text = str(info.value)
    assert "\n" not in text and url in text
    if mode == "trickle":
        assert "did not finish its reply within 3 s" in text and "KGRAG_OPENAI_TIMEOUT" in text
    elif mode == "badjson_shape":
        assert "not shaped as a chat completion" in text
    else:
        assert "not a JSON object" in text


def test_the_openai_cache_key_names_the_server(bad_server, tmp_path):
    from kgrag_utils.llm import load_llm
    from kgrag_utils.llm.cache import ResponseCache

    cache = ResponseCache(tmp_path / "c.sqlite")
    one, two = (load_llm("qwen2.5-coder-0.5b", backend="openai", base_url=bad_server("ok"), model="m", cache=cache)
                for _ in range(2))
    assert one.cache_key("q") != two.cache_key("q")  # a reply from one server is never replayed for another
    first = one.generate(["q"], max_new_tokens=2)[0]
    assert first.text == "Paris" and not first.cached and not two.generate(["q"], max_new_tokens=2)[0].cached


# ----------------------------------------------------------------------------- N7: a reply cache locked elsewhere
_HOLD = """
import sqlite3, sys, time

conn = sqlite3.connect(sys.argv[1], isolation_level=None)
conn.execute("BEGIN EXCLUSIVE")
print("held", flush=True)
time.sleep(float(sys.argv[2]))
"""


def test_a_held_reply_cache_is_a_bounded_wait_then_one_line_naming_the_file(tmp_path, capfd):
    from kgrag_utils.llm.cache import CacheLockedError, ResponseCache

    path = tmp_path / "responses.sqlite"
    ResponseCache(path).put("k0", {"text": "x"})  # the file exists, in WAL mode
    holder = subprocess.Popen([sys.executable, "-c", _HOLD, str(path), "600"], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        cache = ResponseCache(path, timeout_s=3)
        with pytest.raises(CacheLockedError) as info:
            cache.put("k1", {"text": "y"})
    finally:
        holder.kill()
        holder.wait()
    text = str(info.value)
    assert str(path) in text and "fuser" in text and "3 s" in text and "\n" not in text
    assert "waiting up to 3 s for the LLM reply cache" in capfd.readouterr().err
    cache.put("k1", {"text": "y"})  # the holder gone, the write goes through
    assert cache.get("k1") == {"text": "y"}


# ----------------------------------------------------------------------------- N16: the explorer on odd records
def test_the_explorer_lists_odd_but_valid_records_instead_of_stopping(tmp_path):
    from kgrag_utils.explore import compare_runs, open_run

    lines = [{"id": "x1", "question": "q", "scores": {"oracle-chain reader": {"hits@1": 1.0}}},
             {"id": "x2", "question": "q", "scores": {"oracle-chain reader": "hits@1"}},
             {"id": "x3", "question": "q", "scores": {"oracle-chain reader": ["hits@1"]}}, {}, {}]
    for name in ("odd-a", "odd-b"):
        run = tmp_path / name
        run.mkdir()
        (run / records.RUN_FILE).write_text(json.dumps({"run_name": name, "status": "ok", "method": "quickstart",
                                                        "params": {"dataset": "sample-movies-2hop"}}))
        (run / records.EXAMPLES_FILE).write_text("".join(json.dumps(x) + "\n" for x in lines))
    a, b = open_run("odd-a", tmp_path), open_run("odd-b", tmp_path)
    assert len(a) == 5 and list(a.outline["id"][:3]) == ["x1", "x2", "x3"]
    table = compare_runs(a, b, changed_only=False)
    assert sorted(table["id"]) == ["x1", "x2", "x3"]  # records without an id pair with nothing
