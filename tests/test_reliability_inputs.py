"""Issue 27, case 5: a stray byte or a Unicode line separator in a question file.

Real files in each released format: a Latin-1 byte is one error naming the file and the line; a U+2028
inside a question stays inside it, so the question and type files still align.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kgrag_utils.datasets import load_dataset, metaqa
from kgrag_utils.datasets.textfiles import read_lines
from kgrag_utils.errors import DatasetFormatError, IntegrityError

from dataset_files import QA_2HOP, QTYPE_2HOP, data_root  # noqa: F401 - fixtures
from dataset_files import write_lines as _write
from test_datasets import metaqa_root  # noqa: F401 - fixtures


def _latin1_at(path: Path, line: int) -> None:
    """Replace the 'o' of the first 'movies' on line `line` (1-based) by 0xF6, Latin-1's o-umlaut."""
    rows = path.read_bytes().split(b"\n")
    assert b"movies" in rows[line - 1] or b"films" in rows[line - 1]
    rows[line - 1] = rows[line - 1].replace(b"mo", b"m\xf6", 1).replace(b"fil", b"f\xefl", 1)
    path.write_bytes(b"\n".join(rows))


def test_a_latin1_byte_names_the_question_file_and_its_line(metaqa_root):
    qa = metaqa_root / "qa" / "2-hop" / "vanilla" / "qa_test.txt"
    _latin1_at(qa, 4)
    with pytest.raises(DatasetFormatError) as info:
        load_dataset("metaqa-2hop", split="test")
    message = str(info.value)
    assert str(qa) in message and "line 4," in message and "0xef" in message and "UTF-8" in message
    assert "\n" not in message


def test_a_line_separator_inside_a_question_keeps_the_files_aligned(metaqa_root):
    qa = metaqa_root / "qa" / "2-hop" / "vanilla" / "qa_test.txt"
    lines = list(QA_2HOP)
    lines[2] = lines[2].replace("directed", "direc\u2028ted").replace("Meg", "Meg\u2029\x85\x0c")
    _write(qa, lines)
    ds = load_dataset("metaqa-2hop", split="test")
    assert len(ds) == len(QA_2HOP)
    assert "\u2028" in ds[2].question and ds[2].qtype == QTYPE_2HOP[2]
    assert [q.qtype for q in ds] == QTYPE_2HOP


def test_the_not_aligned_message_names_the_fetch_that_fixes_it(metaqa_root):
    _write(metaqa_root / "qa" / "2-hop" / "qa_test_qtype.txt", QTYPE_2HOP[:-1])
    with pytest.raises(IntegrityError) as info:
        metaqa.read_questions(metaqa_root, 2, "test")
    message = str(info.value)
    # the download group and --force (a plain fetch of a copy that looks complete downloads nothing): issue 49, N19
    assert "{hops}" not in message and "kgrag data fetch metaqa --force" in message


def test_crlf_files_read_as_their_lines(tmp_path):
    path = tmp_path / "q.txt"
    path.write_bytes("a\r\nb\u2028c\r\n\r\n".encode("utf-8"))
    assert read_lines(path) == ["a", "b\u2028c"]


def test_a_latin1_byte_in_a_pathquestion_file_names_its_line(tmp_path):
    good = "where is the club of A_B ?\tItaly\tA_B#plays_in_club#C_D#is_in_country#Italy"
    _write(tmp_path / "WC2014.txt", ["A_B\tplays_in_club\tC_D", "C_D\tis_in_country\tItaly"])
    path = tmp_path / "WC-P2.txt"
    path.write_bytes((good + "\n" + good + "\n").encode() + b"caf\xe9 of A_B ?\tItaly\tA_B#plays_in_club#C_D\n")
    with pytest.raises(DatasetFormatError, match=r"WC-P2.txt, line 3, byte 4: 0xe9 is not UTF-8"):
        load_dataset("pq-file", split="all", path=str(path))


def test_a_latin1_byte_in_a_passage_file_names_its_line(data_root):
    root = data_root / "MuSiQue"
    root.mkdir()
    questions = [{"id": "q1", "question": "Where is Paris?", "answer": "France", "paragraphs": []}]
    text = json.dumps(questions, indent=1).replace("Paris", "Par\u00eds")
    (root / "hipporag_musique_train_100q.json").write_bytes(text.encode("latin-1"))
    (root / "hipporag_musique_train_corpus.json").write_text("[]", encoding="utf-8")
    with pytest.raises(DatasetFormatError, match=r"hipporag_musique_train_100q.json, line 4, byte \d+: 0xed"):
        load_dataset("musique")


# ----------------------------------------------------------------------------- case 8: YAML bounds
import os  # noqa: E402
import resource  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402

from kgrag_utils import schema  # noqa: E402
from kgrag_utils.errors import ConfigError, shown  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


def _bomb(levels: int) -> str:
    """A grid whose one parameter nests `levels` aliases, each nine uses of the one before (9**(levels+1) values)."""
    parts = ["&l0 [" + ", ".join(['"xxxxxxxxx"'] * 9) + "]"]
    parts += [f"&l{i} [" + ", ".join([f"*l{i - 1}"] * 9) + "]" for i in range(1, levels + 1)]
    return ("name: bomb\nruns:\n  - notebook: 00_quickstart.ipynb\n    parameters:\n"
            f"      dataset: [{', '.join(parts)}]\n")


def _capped():  # the child may not take the machine down if the bound is missing: 4 GiB of address space
    resource.setrlimit(resource.RLIMIT_AS, (4 << 30, 4 << 30))


@pytest.mark.parametrize("levels", [6, 8])
def test_an_alias_bomb_is_refused_in_one_short_line(tmp_path, levels):
    grid = tmp_path / f"bomb{levels}.yaml"
    grid.write_text(_bomb(levels), encoding="utf-8")
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    try:
        done = subprocess.run([sys.executable, "-m", "kgrag_utils.cli", "grid", str(grid), "--validate-only"],
                              env=env, capture_output=True, text=True, timeout=120, preexec_fn=_capped)
    except subprocess.TimeoutExpired:
        pytest.fail(f"an alias bomb of {levels} levels was still being expanded after 120 s")
    assert done.returncode == 2, done.stderr[-500:]
    lines = [ln for ln in done.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and len(lines[0]) < 400, done.stderr[:500]
    assert f"bomb{levels}.yaml" in lines[0] and "aliases" in lines[0]


def test_a_few_aliases_are_fine_and_a_loop_is_refused():
    spec, _ = schema.parse_grid("defaults: &d {limit: 2}\nruns:\n  - notebook: a.ipynb\n    parameters: *d\n"
                                "  - notebook: b.ipynb\n    parameters: *d\n", "ok.yaml")
    assert spec.runs[0].parameters == spec.runs[1].parameters == {"limit": 2}
    with pytest.raises(ConfigError, match="loop.yaml: a YAML alias refers to a value that contains it"):
        schema.parse_grid("runs:\n  - notebook: a.ipynb\n    parameters: &p {x: *p}\n", "loop.yaml")


def test_grid_axes_that_multiply_past_the_bound_are_refused():
    axes = {f"k{i}": list(range(10)) for i in range(5)}  # 10**5 runs
    with pytest.raises(ConfigError, match=r"run #1: its grid axes .* more than 10,000 runs"):
        schema.validate_grid({"runs": [{"notebook": "a.ipynb", "grid": axes}]}, "big.yaml")


def test_messages_cut_the_values_they_quote():
    defaults = {"limit": 8, "dataset": "sample-movies-2hop"}
    with pytest.raises(ConfigError) as info:
        schema.check_parameters("00_quickstart.ipynb", defaults, {"limit": "9" * 100_000})
    assert len(str(info.value)) < 300 and "100,000 characters" in str(info.value)
    with pytest.raises(ConfigError) as info:
        schema.check_parameters("00_quickstart.ipynb", defaults, {"dataset": [["x" * 50] * 50] * 50})
    assert len(str(info.value)) < 300
    assert len(shown(list(range(10 ** 6)))) < 120


# ----------------------------------------------------------------------------- case 7: -p values by declared type
from kgrag_utils import cli  # noqa: E402


def _cli(*args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.run([sys.executable, "-m", "kgrag_utils.cli", *args], env=env, capture_output=True, text=True,
                          timeout=600)


def test_p_values_are_read_against_the_parameters_type():
    got = cli._notebook_params("00_quickstart", ["run_name=exp #3", "llm_structured=off", "dataset=2024-06-01",
                                                 "limit=7", "split=yes"])
    assert got == {"run_name": "exp #3", "llm_structured": "off", "dataset": "2024-06-01", "limit": 7, "split": "yes"}
    flags = cli._notebook_params("01_simgrag", ["injective=off", "reader=TRUE", "time_limit_s=3", "anchor_entity=1"])
    assert flags == {"injective": False, "reader": True, "time_limit_s": 3.0, "anchor_entity": True}
    assert cli._notebook_params("04_kgp", ["ks=[1, 5]"])["ks"] == [1, 5]


@pytest.mark.parametrize("item, words", [
    ("limit=many", ["'limit'", "whole number", "-p limit="]),
    ("limit=3.5", ["'limit'", "whole number"]),
    ("injective=maybe", ["'injective'", "true or false"]),
    ("ks=5", ["'ks'", "a list"]),
])
def test_p_values_that_do_not_fit_are_refused_naming_the_parameter(item, words):
    notebook = "04_kgp" if item.startswith("ks") else "01_simgrag"
    with pytest.raises(ConfigError) as info:
        cli._notebook_params(notebook, [item])
    assert all(w in str(info.value) for w in words), str(info.value)


def test_kgrag_run_keeps_a_run_name_as_typed_and_a_grid_takes_off(tmp_path):
    done = _cli("run", "00_quickstart", "-p", "llm_preset=fake", "-p", "run_name=exp #3")
    assert done.returncode == 2
    lines = [ln for ln in done.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and "'exp #3'" in lines[0], done.stderr  # refused as it was typed, not run as 'exp'
    grid = tmp_path / "typed.yaml"
    grid.write_text("name: typed\nruns:\n  - notebook: 00_quickstart.ipynb\n", encoding="utf-8")
    ok = _cli("grid", str(grid), "--validate-only", "-p", "llm_structured=off", "-p", "llm_preset=fake",
              "-p", "run_name=2024-06-01")
    assert ok.returncode == 0, ok.stderr
    assert "2024-06-01" in ok.stdout and "1 runs validated" in ok.stdout
