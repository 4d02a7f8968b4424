"""The download step (`kgrag data fetch`): pinned files fetched, verified and laid out; failures leave nothing behind."""

from __future__ import annotations

import hashlib
import sys
import zipfile
from pathlib import Path

import pytest
from dataset_files import KB_LINES, PQ_KB, PQ_LINES, QA_2HOP, QTYPE_2HOP, data_root, write_lines  # noqa: F401 (a fixture)

from kgrag_utils.datasets import download, load_dataset, metaqa
from kgrag_utils.errors import BackendUnavailableError, ConfigError, IntegrityError, MissingDependencyError

# ----------------------------------------------------------------------------- download


def _file_group(tmp_path: Path, files: dict[str, bytes], pin: bool = True, lines: bool = False):
    src = tmp_path / "remote"
    src.mkdir(exist_ok=True)
    remote = []
    for name, data in files.items():
        (src / name).write_bytes(data)
        remote.append(download.RemoteFile(
            (src / name).as_uri(), name, hashlib.sha256(data).hexdigest() if pin else None,
            len(data) if pin else None, len(data.splitlines()) if lines else None))
    return download.Group("PathQuestion", tuple(remote), "https://example.org/by-hand", "test")


def test_fetch_downloads_verifies_and_is_idempotent(tmp_path, monkeypatch):
    group = _file_group(tmp_path, {"PQ-2H.txt": "\n".join(PQ_LINES).encode() + b"\n",
                                   "2H-kb.txt": "\n".join(PQ_KB).encode() + b"\n"}, lines=True)
    monkeypatch.setitem(download.GROUPS, "pathquestion", group)
    dest = tmp_path / "data"
    log: list[str] = []
    folder = download.fetch("pq-2hop", dest=dest, log=log.append)
    assert folder == dest / "PathQuestion" and (folder / "PQ-2H.txt").is_file()
    assert sum("bytes" in line for line in log) == 2
    log.clear()
    download.fetch("pathquestion", dest=dest, log=log.append)
    assert not any("bytes" in line for line in log)  # verified copies are not downloaded again
    monkeypatch.setenv("KGRAG_DATA_DIR", str(dest))
    assert len(load_dataset("pq-2hop", split="all")) == 3


def test_fetch_rejects_a_file_that_does_not_match_its_pin(tmp_path, monkeypatch):
    group = _file_group(tmp_path, {"PQ-2H.txt": b"good\n"})
    bad = download.RemoteFile(group.files[0].url, "PQ-2H.txt", "0" * 64, None)
    monkeypatch.setitem(download.GROUPS, "pathquestion", download.Group("PathQuestion", (bad,), "p", "l"))
    with pytest.raises(IntegrityError, match="sha256"):
        download.fetch("pq-2hop", dest=tmp_path / "data", log=lambda s: None)


def test_fetch_a_mismatched_download_leaves_nothing_behind(tmp_path, monkeypatch):
    group = _file_group(tmp_path, {"PQ-2H.txt": b"good\n"})
    bad = download.RemoteFile(group.files[0].url, "PQ-2H.txt", "0" * 64, None)
    monkeypatch.setitem(download.GROUPS, "pathquestion", download.Group("PathQuestion", (bad,), "p", "l"))
    monkeypatch.setattr(download, "DOWNLOAD_RETRIES", 0)
    with pytest.raises(IntegrityError) as info:
        download.fetch("pq-2hop", dest=tmp_path / "data", log=lambda s: None)
    assert "\n" not in str(info.value) and "by hand" in str(info.value)
    assert list((tmp_path / "data" / "PathQuestion").iterdir()) == []  # no file, no temporary left over


def test_fetch_retries_a_failed_transfer_through_pooch(tmp_path, monkeypatch):
    import requests

    group = _file_group(tmp_path, {"PQ-2H.txt": "\n".join(PQ_LINES).encode() + b"\n"})
    monkeypatch.setitem(download.GROUPS, "pathquestion", group)
    monkeypatch.setattr(download, "DOWNLOAD_RETRIES", 1)
    calls = []

    def flaky(url, output_file, pooch):
        calls.append(url)
        if len(calls) == 1:
            raise requests.exceptions.ConnectionError("connection reset")
        download._file_downloader(url, output_file, pooch)

    monkeypatch.setattr(download, "_downloader_for", lambda url, pooch: flaky)
    folder = download.fetch("pq-2hop", dest=tmp_path / "data", log=lambda s: None)
    assert len(calls) == 2
    assert (folder / "PQ-2H.txt").read_bytes() == (tmp_path / "remote" / "PQ-2H.txt").read_bytes()


def test_fetch_a_failed_forced_refetch_keeps_the_good_copy(tmp_path, monkeypatch):
    import requests

    group = _file_group(tmp_path, {"PQ-2H.txt": b"good\n"})
    monkeypatch.setitem(download.GROUPS, "pathquestion", group)
    folder = download.fetch("pq-2hop", dest=tmp_path / "data", log=lambda s: None)

    def down(url, output_file, pooch):
        raise requests.exceptions.ConnectionError("host went away")

    monkeypatch.setattr(download, "DOWNLOAD_RETRIES", 0)
    monkeypatch.setattr(download, "_downloader_for", lambda url, pooch: down)
    with pytest.raises(BackendUnavailableError) as info:
        download.fetch("pq-2hop", dest=tmp_path / "data", force=True, log=lambda s: None)
    assert "\n" not in str(info.value) and "ConnectionError" in str(info.value)
    assert (folder / "PQ-2H.txt").read_bytes() == b"good\n"
    assert sorted(p.name for p in folder.iterdir()) == ["PQ-2H.txt"]


def test_fetch_without_pooch_names_the_extra(tmp_path, monkeypatch):
    group = _file_group(tmp_path, {"PQ-2H.txt": b"good\n"})
    monkeypatch.setitem(download.GROUPS, "pathquestion", group)
    monkeypatch.setitem(sys.modules, "pooch", None)  # import pooch -> ImportError
    with pytest.raises(MissingDependencyError) as info:
        download.fetch("pq-2hop", dest=tmp_path / "data", log=lambda s: None)
    assert "\n" not in str(info.value) and ".[data]" in str(info.value)


def test_fetch_offline_fails_fast_with_one_line(tmp_path, monkeypatch):
    def refuse(*args, **kwargs):
        raise OSError("network unreachable")

    monkeypatch.setattr(download.socket, "create_connection", refuse)
    with pytest.raises(BackendUnavailableError) as info:
        download.fetch("musique", dest=tmp_path / "data", log=lambda s: None)
    msg = str(info.value)
    assert "\n" not in msg and "HippoRAG" in msg and str(tmp_path / "data" / "MuSiQue") in msg


def test_group_of():
    assert download.group_of("metaqa-3hop") == "metaqa"
    assert download.group_of("pq-2hop") == "pathquestion"
    assert download.group_of("wc2014-conj") == "wc2014"
    assert download.group_of("2wiki") == "2wiki"
    with pytest.raises(ConfigError):
        download.group_of("sample-kinship")


def test_status_lists_real_datasets_with_their_source(data_root):
    rows = download.status()
    names = {r["name"] for r in rows}
    assert {"metaqa-1hop", "pq-3hop", "clutrr", "musique", "2wiki"} <= names
    assert not any(r["source"] == "sample" for r in rows)
    assert all(r["present"] is False for r in rows)  # the fixture data dir is empty
    assert all(r["source_page"].startswith("https://") for r in rows)


def test_layout_metaqa_from_an_unpacked_release(tmp_path):
    stage = tmp_path / "stage" / "MetaQA"
    write_lines(stage / "kb.txt", KB_LINES)
    write_lines(stage / "2-hop" / "vanilla" / "qa_test.txt", QA_2HOP)
    write_lines(stage / "2-hop" / "qa_test_qtype.txt", QTYPE_2HOP)
    write_lines(stage / "2-hop" / "ntm" / "qa_test.txt", QA_2HOP)
    out = tmp_path / "MetaQA"
    download._layout_metaqa(tmp_path / "stage", out)
    assert (out / "kb.txt").is_file() and (out / "qa" / "2-hop" / "ntm" / "qa_test.txt").is_file()
    questions, _ = metaqa.read_questions(out, 2, "test")
    assert len(questions) == 5 and questions[0].chain == [("starred_actors", False), ("directed_by", True)]


def test_safe_extract_refuses_path_traversal(tmp_path):
    archive = tmp_path / "evil.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr("../escape.txt", "x")
    with pytest.raises(IntegrityError, match="outside"):
        download._safe_extract(archive, tmp_path / "out")
    assert not (tmp_path / "escape.txt").exists()
