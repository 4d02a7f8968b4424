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

from test_datasets import QA_2HOP, QTYPE_2HOP, _write, data_root, metaqa_root  # noqa: F401 - fixtures


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


def test_the_not_aligned_message_names_the_dataset(metaqa_root):
    _write(metaqa_root / "qa" / "2-hop" / "qa_test_qtype.txt", QTYPE_2HOP[:-1])
    with pytest.raises(IntegrityError) as info:
        metaqa.read_questions(metaqa_root, 2, "test")
    message = str(info.value)
    assert "{hops}" not in message and "kgrag data fetch metaqa-2hop" in message


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
