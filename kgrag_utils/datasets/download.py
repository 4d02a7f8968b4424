"""Fetch the real benchmarks from their official sources and lay them out as the loaders read them.

    fetch("pq-2hop")      # or a group: "metaqa", "pathquestion", "wc2014", "clutrr", "hotpotqa",
                          # "musique", "2wiki"; or "all"
    status()              # which registered real datasets are present, where, and how to get them

Sources (documented in data/README.md):
* PathQuestion and WC2014: the IRN repository, github.com/zmtkeke/IRN (raw files, sha256 pinned).
* HotpotQA / MuSiQue / 2Wiki samples and MuSiQue's OpenIE triples: the HippoRAG repository,
  github.com/OSU-NLP-Group/HippoRAG, branch `legacy` (= v1.0.0; sha256 pinned).
* CLUTRR: the rule store from github.com/facebookresearch/clutrr (sha256 pinned) and the
  pre-generated data (`data_089907f8`) from the Google Drive file linked in that repository's README.
* MetaQA: the official Google Drive folder linked from github.com/yuyuz/MetaQA (needs `gdown`).
* FactKG: the Google Drive folder linked from github.com/jiho283/FactKG (needs `gdown`) plus
  relations_for_final.pickle from that repository. WebQSP / CWQ: RoG's parquet releases on the
  Hugging Face hub (rmanluo/RoG-webqsp, rmanluo/RoG-cwq; needs `huggingface_hub`). IIRC: AI2's S3
  bucket iirc-dataset.s3.us-west-2.amazonaws.com. Formats, sizes, licenses: data/FORMATS.md.
Plain files go through `pooch` (the `data` extra): it streams to a temporary file, checks the
pinned sha256 before the file is moved into place, and retries after network errors. On top of it
we keep: the offline probe (without network the first connection fails within a few seconds with
one line that says what to do by hand), size and line / row counts where known, the check that
skips files already present and verified, Google Drive (gdown), the Hugging Face hub client, and
archive extraction that refuses paths outside the target.
"""

from __future__ import annotations

import csv
import hashlib
import os
import shutil
import socket
import sys
import tarfile
import tempfile
import urllib.parse
import urllib.request
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from .. import settings
from ..errors import BackendUnavailableError, ConfigError, IntegrityError, KgragError, require
from .registry import get_spec, list_datasets

__all__ = ["RemoteFile", "GROUPS", "fetch", "status", "group_of"]

CONNECT_TIMEOUT_S = 5.0
READ_TIMEOUT_S = 60.0
#: pooch retries a download this many times after a network error or a checksum mismatch
DOWNLOAD_RETRIES = 2
_IRN = "https://raw.githubusercontent.com/zmtkeke/IRN/master"
_HIPPO = "https://raw.githubusercontent.com/OSU-NLP-Group/HippoRAG/legacy"
_CLUTRR = "https://raw.githubusercontent.com/facebookresearch/clutrr/main"
CLUTRR_DRIVE_FILE = "1SEq_e1IVCDDzsBIBhoUQ5pOVH5kxRoZF"
CLUTRR_DATA_FOLDER = "data_089907f8"
METAQA_DRIVE_FOLDER = "https://drive.google.com/drive/folders/0B-36Uca2AvwhTWVFSUZqRXVtbUE?resourcekey=0-kdv6ho5KcpEXdI2aUdLn_g"
FACTKG_DRIVE_FOLDER = "https://drive.google.com/drive/folders/1q0_MqBeGAp5_cBJCBf_1alYaYm14OeTk"
FACTKG_FILES = ("factkg_train.pickle", "factkg_dev.pickle", "factkg_test.pickle",
                "dbpedia_2015_undirected.pickle", "dbpedia_2015_undirected_light.pickle")
_FACTKG_REPO = "https://raw.githubusercontent.com/jiho283/FactKG/43d724015f3d751925ba0495ab1e769f1469131f"
_IIRC = "https://iirc-dataset.s3.us-west-2.amazonaws.com"
#: Hugging Face dataset repositories and the revision fetched ("main" where no commit is pinned).
HF_DATASETS = {"webqsp": ("rmanluo/RoG-webqsp", "main"),
               "cwq": ("rmanluo/RoG-cwq", "b0f6275586286312c4e99ef4b0adc65463c91f8e")}


@dataclass(frozen=True)
class RemoteFile:
    """One file to download: where from, where to (relative to the group folder), and its checks."""

    url: str
    dest: str
    sha256: str | None = None
    size: int | None = None
    lines: int | None = None


@dataclass(frozen=True)
class Group:
    folder: str
    files: tuple[RemoteFile, ...]
    page: str  # where a person can download by hand
    license: str
    special: str | None = None  # "metaqa" | "clutrr" | "factkg": Google Drive; "hf": hub; "iirc": archives


GROUPS: dict[str, Group] = {
    "pathquestion": Group("PathQuestion", (
        RemoteFile(f"{_IRN}/PathQuestion/PQ-2H.txt", "PQ-2H.txt",
                   "86f4a060a6d8a3d496671e6cfa73bf15b7f71422e9b49eefebc3f8fbe3618aef", 331278, 1908),
        RemoteFile(f"{_IRN}/PathQuestion/PQ-3H.txt", "PQ-3H.txt",
                   "e0c5da286a830111e18122ad14ac195dc6bf90d42e2ec5c0c96522b51f16c69f", 1240569, 5198),
        RemoteFile(f"{_IRN}/PathQuestion/2H-kb.txt", "2H-kb.txt",
                   "1e8d8e7f950d7d0fe949b377b065b569c5b84d87273ec1600331f5ba985145d7", 55326, 1211),
        RemoteFile(f"{_IRN}/PathQuestion/3H-kb.txt", "3H-kb.txt",
                   "27eb687c67086eb684a43f524cc9560f76f52161e1a038b6be45ff2a24c50374", 139318, 2839),
        RemoteFile(f"{_IRN}/PathQuestion/readme.txt", "readme.txt",
                   "07a2a2879ef2d9baa27c0cdcddfbeca9d2143ead3ecff041e27515620ddfaa17", 540),
    ), "https://github.com/zmtkeke/IRN/tree/master/PathQuestion", "none stated (research data)"),
    "wc2014": Group("WC2014", (
        RemoteFile(f"{_IRN}/WC2014/WC-P1.txt", "WC-P1.txt"),
        RemoteFile(f"{_IRN}/WC2014/WC-P2.txt", "WC-P2.txt",
                   "ad8068f723f90780ecd1d1135a94d9066ed8aa0fb48b18522eaf7f63fdcb6872", 715685, 1472),
        RemoteFile(f"{_IRN}/WC2014/WC-C.txt", "WC-C.txt",
                   "88739b89bbec881b539d95fb80f8dc824504ebcdc7983263663c545314cb892c", 1245570, 2208),
        RemoteFile(f"{_IRN}/WC2014/WC2014.txt", "WC2014.txt",
                   "e1c8233e4c3f198497cb752c47e631ef834ae3ff2f7eff2b7779ba035750a489", 262998, 6482),
    ), "https://github.com/zmtkeke/IRN/tree/master/WC2014", "none stated (research data)"),
    "hotpotqa": Group("HotpotQA", (
        RemoteFile(f"{_HIPPO}/data/hotpotqa_train.json", "hipporag_hotpotqa_train_100q.json",
                   "6c0e2689d03c94b3bb4d5f94ed806ea4f4eb4f46c12132f8e91df774ad5c5a22", 810836),
        RemoteFile(f"{_HIPPO}/data/hotpotqa_train_corpus.json", "hipporag_hotpotqa_train_corpus.json",
                   "2671af600095eabc5b3f3bc3728861682f14fcced84ef1386509a8ae92647f88", 640159),
        RemoteFile(f"{_HIPPO}/LICENSE", "LICENSE.HippoRAG-MIT.txt"),
    ), "https://github.com/OSU-NLP-Group/HippoRAG/tree/legacy/data", "CC BY-SA 4.0 (HotpotQA); MIT (HippoRAG files)"),
    "musique": Group("MuSiQue", (
        RemoteFile(f"{_HIPPO}/data/musique_train.json", "hipporag_musique_train_100q.json",
                   "bca674746844637f5c68408a96b67bc0542d98e7c53715f3acafe144bd5e4ff4", 1179088),
        RemoteFile(f"{_HIPPO}/data/musique_train_corpus.json", "hipporag_musique_train_corpus.json",
                   "79845dd085f9df49c8ce440208763e2611aeb86c81ee0bdad2094504381bb651", 974514),
        RemoteFile(f"{_HIPPO}/output/openie_musique_train_results_ner_gpt-3.5-turbo-1106_1890.json",
                   "hipporag_openie_musique_train_results_ner_gpt-3.5-turbo-1106_1890.json",
                   "4258bcc89bb20bb5c20e6700b87e21063521a6c3ef5a136ab0d0d7c0ea237585", 3344000),
        RemoteFile(f"{_HIPPO}/LICENSE", "LICENSE.HippoRAG-MIT.txt"),
    ), "https://github.com/OSU-NLP-Group/HippoRAG/tree/legacy/data", "CC BY 4.0 (MuSiQue); MIT (HippoRAG files)"),
    "2wiki": Group("2WikiMultiHopQA", (
        RemoteFile(f"{_HIPPO}/data/2wikimultihopqa_corpus.json", "hipporag_2wikimultihopqa_corpus.json",
                   "9d6e352952aafb18dab22bf8195039461321a44a949df902ae83bce134ad238a", 3083943),
        RemoteFile(f"{_HIPPO}/data/2wikimultihopqa.json", "2wikimultihopqa.json"),
        RemoteFile(f"{_HIPPO}/LICENSE", "LICENSE.HippoRAG-MIT.txt"),
    ), "https://github.com/OSU-NLP-Group/HippoRAG/tree/legacy/data", "Apache-2.0 (2WikiMultiHopQA); MIT (HippoRAG files)"),
    "clutrr": Group("CLUTRR", (
        RemoteFile(f"{_CLUTRR}/clutrr/store/rules_store.yaml", "clutrr_store/rules_store.yaml",
                   "122b57241d1cba17e6def0c246007e3e6a9b3c8c654290fecaca3e1fde5bf14a", 1594),
        RemoteFile(f"{_CLUTRR}/clutrr/store/relations_store.yaml", "clutrr_store/relations_store.yaml",
                   "c2b9e2723aea7007abb7418e97f294fa696a75c0466d0195c21d78c96c33363d", 3578),
        RemoteFile(f"{_CLUTRR}/clutrr/store/question_store.yaml", "clutrr_store/question_store.yaml",
                   "10f84ed45ca86a008772d63deea1075cb4e6ec2ed77a512e91aef584eac8dc21", 476),
        RemoteFile(f"{_CLUTRR}/clutrr/store/attribute_store.json", "clutrr_store/attribute_store.json",
                   "d196562c3c2746b393859d42a9d151f182d802f3de202eccc19d79ffe17df46f", 1757),
        RemoteFile(f"{_CLUTRR}/LICENSE", "LICENSE.clutrr-CC-BY-NC-4.0.txt"),
    ), f"https://drive.google.com/file/d/{CLUTRR_DRIVE_FILE}/view", "CC BY-NC 4.0", special="clutrr"),
    "metaqa": Group("MetaQA", (), METAQA_DRIVE_FOLDER, "CC BY 3.0", special="metaqa"),
    "factkg": Group("FactKG", (
        RemoteFile(f"{_FACTKG_REPO}/with_evidence/retrieve/model/relation_predict/relations_for_final.pickle",
                   "relations_for_final.pickle"),
    ), FACTKG_DRIVE_FOLDER, "none stated by FactKG; DBpedia data CC BY-SA 3.0", special="factkg"),
    "webqsp": Group("RoG-webqsp", (), "https://huggingface.co/datasets/rmanluo/RoG-webqsp",
                    "none stated on the hub card; Freebase-derived (Freebase: CC BY 2.5)", special="hf"),
    "cwq": Group("RoG-cwq", (), "https://huggingface.co/datasets/rmanluo/RoG-cwq",
                 "none stated on the hub card; Freebase-derived (Freebase: CC BY 2.5)", special="hf"),
    "iirc": Group("IIRC", (
        RemoteFile(f"{_IIRC}/iirc_test.json", "iirc_test.json"),
    ), "https://allenai.org/data/iirc", "see allenai.org/data/iirc (not verified here)", special="iirc"),
}

#: Rows (data lines) of the CLUTRR files we know, checked after extraction.
CLUTRR_ROWS = {"1.2,1.3_train.csv": 10094, "1.2_test.csv": 38, "1.3_test.csv": 105, "1.4_test.csv": 190,
               "1.5_test.csv": 174, "1.6_test.csv": 107, "1.7_test.csv": 144}
#: Lines of the MetaQA files, per hop and split (the official release).
METAQA_LINES = {(1, "dev"): 9992, (1, "test"): 9947, (2, "dev"): 14872, (2, "test"): 14872,
                (3, "dev"): 14274, (3, "test"): 14274}


def group_of(name: str) -> str:
    """Download group of a dataset name ('metaqa-2hop' -> 'metaqa'); group names map to themselves."""
    if name in GROUPS:
        return name
    spec = get_spec(name)
    if spec.source != "real" or not spec.folder:
        raise ConfigError(f"dataset {name!r} is not downloaded: {'it is generated on first use' if spec.source in ('sample', 'fixture') else 'it reads a file you name'}.")
    for group, g in GROUPS.items():
        if g.folder == spec.folder:
            return group
    raise ConfigError(f"no download source registered for {name!r}.")  # pragma: no cover


# ----------------------------------------------------------------------------- transfer helpers


def _check_reachable(url: str, group: str, folder: Path, timeout: float = CONNECT_TIMEOUT_S) -> None:
    """Fail fast, in one line, when the host cannot be reached (no network, proxy, firewall)."""
    parts = urllib.parse.urlsplit(url)
    if parts.scheme == "file":
        return
    host, port = parts.hostname or "", parts.port or (443 if parts.scheme == "https" else 80)
    try:
        socket.create_connection((host, port), timeout=timeout).close()
    except OSError as exc:
        raise BackendUnavailableError(
            f"cannot reach {host} to fetch {group!r} ({exc.__class__.__name__}: no network?): download it by hand "
            f"from {GROUPS[group].page} into {folder}, or set KGRAG_DATA_DIR."
        ) from None


def _file_ok(path: Path, spec: RemoteFile) -> bool:
    if not path.is_file():
        return False
    if spec.size is not None and path.stat().st_size != spec.size:
        return False
    if spec.sha256 is not None and _sha256(path) != spec.sha256:
        return False
    return spec.sha256 is not None or spec.size is not None or path.stat().st_size > 0


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _count_lines(path: Path) -> int:
    with open(path, "rb") as fh:
        data = fh.read()
    return sum(1 for line in data.splitlines() if line.strip())


def _file_downloader(url: str, output_file, pooch) -> None:  # noqa: ARG001 - pooch's downloader signature
    """A pooch downloader for file:// URLs (local mirrors; the tests' sources)."""
    src = Path(urllib.request.url2pathname(urllib.parse.urlsplit(url).path))
    if hasattr(output_file, "write"):
        with open(src, "rb") as fh:
            shutil.copyfileobj(fh, output_file)
    else:
        shutil.copyfile(src, output_file)


def _downloader_for(url: str, pooch_module):
    """pooch's HTTP downloader with our time limits and User-Agent, or a local copy for file:// URLs."""
    if urllib.parse.urlsplit(url).scheme == "file":
        return _file_downloader
    return pooch_module.HTTPDownloader(timeout=(CONNECT_TIMEOUT_S, READ_TIMEOUT_S),
                                       headers={"User-Agent": "kgrag-utils data fetch"})


def _download(url: str, dest: Path, log: Callable[[str], None], sha256: str | None = None) -> None:
    """Download a URL to `dest` through pooch; the file appears at `dest` only once it verified.

    pooch streams into a temporary file, checks the pinned sha256 before moving it, and retries
    `DOWNLOAD_RETRIES` times after a network error or a mismatch. We stage that in a temporary
    folder beside `dest`, so a failed or forced re-download never removes a good copy, and turn
    pooch's errors into this project's one-line errors.
    """
    pooch = require("pooch", "data", "Downloading benchmark files")
    import requests

    dest.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=dest.parent, prefix=f".{dest.name}.") as stage:
        fetcher = pooch.create(path=stage, base_url="", registry={dest.name: f"sha256:{sha256}" if sha256 else None},
                               urls={dest.name: url}, retry_if_failed=DOWNLOAD_RETRIES)
        try:
            got = Path(fetcher.fetch(dest.name, downloader=_downloader_for(url, pooch)))
        except ValueError as exc:
            if "hash" not in str(exc):
                raise
            raise IntegrityError(f"{url} does not match its pinned sha256 {str(sha256)[:12]}... after "
                                 f"{1 + DOWNLOAD_RETRIES} tries: fetch it by hand into {dest.parent} and check it.") from None
        except (requests.exceptions.RequestException, OSError) as exc:
            raise BackendUnavailableError(f"download of {url} failed ({exc.__class__.__name__}: "
                                          f"{str(exc).splitlines()[0][:120] if str(exc) else 'no detail'}); retry, "
                                          f"or fetch it by hand into {dest.parent}.") from None
        log(f"  {dest.name}: {got.stat().st_size:,} bytes")
        os.replace(got, dest)


def _verify(path: Path, spec: RemoteFile, hashed: bool = False) -> None:
    """Size, sha256 (unless pooch just checked it: `hashed`) and line count against the pins."""
    size = path.stat().st_size
    if spec.size is not None and size != spec.size:
        raise IntegrityError(f"{path} has {size:,} bytes, expected {spec.size:,}: delete it and fetch again.")
    if spec.sha256 is not None and not hashed:
        digest = _sha256(path)
        if digest != spec.sha256:
            raise IntegrityError(f"{path} sha256 {digest[:12]}... differs from the pinned {spec.sha256[:12]}...: "
                                 "delete it and fetch again.")
    if spec.lines is not None:
        n = _count_lines(path)
        if n != spec.lines:
            raise IntegrityError(f"{path} has {n:,} lines, expected {spec.lines:,}: delete it and fetch again.")


def _safe_extract(archive: Path, target: Path) -> None:
    """Extract zip/tar archives, refusing members that would land outside `target`."""
    target = target.resolve()

    def inside(name: str) -> bool:
        return str((target / name).resolve()).startswith(str(target) + os.sep)

    if zipfile.is_zipfile(archive):
        with zipfile.ZipFile(archive) as zf:
            bad = [n for n in zf.namelist() if not inside(n)]
            if bad:
                raise IntegrityError(f"{archive.name} holds a path outside the target ({bad[0]!r}); not extracting.")
            zf.extractall(target)
    elif tarfile.is_tarfile(archive):
        with tarfile.open(archive) as tf:
            members = [m for m in tf.getmembers() if m.isfile() or m.isdir()]
            bad = [m.name for m in members if not inside(m.name)]
            if bad:
                raise IntegrityError(f"{archive.name} holds a path outside the target ({bad[0]!r}); not extracting.")
            tf.extractall(target, members=members)
    else:
        raise IntegrityError(f"{archive.name} is neither a zip nor a tar archive; download it by hand.")


def _gdrive_file(file_id: str, dest: Path, log: Callable[[str], None]) -> None:
    """A Google Drive file: with gdown when installed, else the direct-download endpoint."""
    try:
        import gdown  # type: ignore
    except ImportError:
        _download(f"https://drive.usercontent.google.com/download?id={file_id}&export=download&confirm=t", dest, log)
        return
    dest.parent.mkdir(parents=True, exist_ok=True)
    if gdown.download(id=file_id, output=str(dest), quiet=True) is None:
        raise BackendUnavailableError(f"Google Drive refused file {file_id}; download it by hand into {dest.parent}.")


# ----------------------------------------------------------------------------- special groups


def _fetch_clutrr_data(folder: Path, log: Callable[[str], None], force: bool) -> None:
    data_dir = folder / CLUTRR_DATA_FOLDER
    if not force and all((data_dir / f).is_file() for f in CLUTRR_ROWS):
        _check_clutrr_rows(data_dir)
        return
    _check_reachable("https://drive.usercontent.google.com", "clutrr", folder)
    with tempfile.TemporaryDirectory(dir=folder) as tmp:
        archive = Path(tmp) / "clutrr_data.zip"
        log("  CLUTRR pre-generated data (Google Drive)")
        _gdrive_file(CLUTRR_DRIVE_FILE, archive, log)
        _safe_extract(archive, Path(tmp) / "x")
        found = [p for p in (Path(tmp) / "x").rglob(CLUTRR_DATA_FOLDER) if p.is_dir()]
        if not found:
            raise IntegrityError(f"the CLUTRR archive has no {CLUTRR_DATA_FOLDER}/ folder; download it by hand from "
                                 f"{GROUPS['clutrr'].page}.")
        if data_dir.exists():
            shutil.rmtree(data_dir)
        shutil.copytree(found[0], data_dir)
    _check_clutrr_rows(data_dir)


def _check_clutrr_rows(data_dir: Path) -> None:
    csv.field_size_limit(min(sys.maxsize, 2**31 - 1))
    for name, rows in CLUTRR_ROWS.items():
        path = data_dir / name
        if not path.is_file():
            raise IntegrityError(f"{path} is missing after extraction; download CLUTRR by hand.")
        with open(path, encoding="utf-8", newline="") as fh:
            n = sum(1 for _ in csv.DictReader(fh))
        if n != rows:
            raise IntegrityError(f"{path} has {n:,} rows, expected {rows:,}: delete it and fetch again.")


def _fetch_metaqa(folder: Path, log: Callable[[str], None], force: bool) -> None:
    if not force and _metaqa_complete(folder):
        return
    gdown = require("gdown", "data", "Downloading MetaQA from its official Google Drive folder")
    _check_reachable("https://drive.google.com", "metaqa", folder)
    with tempfile.TemporaryDirectory(dir=folder.parent) as tmp:
        stage = Path(tmp)
        log("  MetaQA (Google Drive folder; this can take several minutes)")
        got = gdown.download_folder(url=METAQA_DRIVE_FOLDER, output=str(stage / "raw"), quiet=True,
                                    remaining_ok=True)
        if not got:
            raise BackendUnavailableError(f"Google Drive returned no MetaQA files; download them by hand from "
                                          f"{METAQA_DRIVE_FOLDER} into {folder}.")
        for archive in [p for p in stage.rglob("*") if p.suffix in (".zip", ".gz", ".tgz") and p.is_file()]:
            _safe_extract(archive, archive.parent)
        _layout_metaqa(stage, folder)
    if not _metaqa_complete(folder):
        raise IntegrityError(f"MetaQA files are incomplete in {folder}; download them by hand from {METAQA_DRIVE_FOLDER}.")


def _layout_metaqa(stage: Path, folder: Path) -> None:
    """Copy kb.txt, the vanilla/ntm QA files and the qtype files from an unpacked release."""
    folder.mkdir(parents=True, exist_ok=True)
    files = [p for p in stage.rglob("*") if p.is_file()]

    def find(*tail: str) -> Path | None:
        hits = [p for p in files if p.parts[-len(tail):] == tail]
        return hits[0] if hits else None

    kb = find("kb.txt")
    if kb is not None:
        shutil.copyfile(kb, folder / "kb.txt")
    for k in (1, 2, 3):
        for split in ("train", "dev", "test"):
            for variant in ("vanilla", "ntm"):
                src = find(f"{k}-hop", variant, f"qa_{split}.txt")
                if src is not None:
                    dst = folder / "qa" / f"{k}-hop" / variant / f"qa_{split}.txt"
                    dst.parent.mkdir(parents=True, exist_ok=True)
                    shutil.copyfile(src, dst)
            src = find(f"{k}-hop", f"qa_{split}_qtype.txt")
            if src is not None:
                dst = folder / "qa" / f"{k}-hop" / f"qa_{split}_qtype.txt"
                dst.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(src, dst)
    lic = [p for p in files if p.name.lower().startswith("license")]
    if lic:
        shutil.copyfile(lic[0], folder / "LICENSE.MetaQA-CC-BY-3.0.txt")


def _metaqa_complete(folder: Path) -> bool:
    if not any((folder / n).is_file() for n in ("kb.txt", "kb_reconstructed.txt")):
        return False
    for (k, split), lines in METAQA_LINES.items():
        qa = folder / "qa" / f"{k}-hop" / "vanilla" / f"qa_{split}.txt"
        qt = folder / "qa" / f"{k}-hop" / f"qa_{split}_qtype.txt"
        if not (qa.is_file() and qt.is_file()) or _count_lines(qa) != lines or _count_lines(qt) != lines:
            return False
    return True


def _fetch_factkg(folder: Path, log: Callable[[str], None], force: bool) -> None:
    """The claim and DBpedia pickles from FactKG's Google Drive folder (several GB; needs gdown)."""
    if not force and all((folder / f).is_file() for f in FACTKG_FILES[:3]) and any(
            (folder / f).is_file() for f in FACTKG_FILES[3:]):
        return
    gdown = require("gdown", "data", "Downloading FactKG from its Google Drive folder")
    _check_reachable("https://drive.google.com", "factkg", folder)
    with tempfile.TemporaryDirectory(dir=folder) as tmp:
        log("  FactKG pickles (Google Drive folder; the full DBpedia pickle is large)")
        got = gdown.download_folder(url=FACTKG_DRIVE_FOLDER, output=str(Path(tmp) / "raw"), quiet=True,
                                    remaining_ok=True)
        if not got:
            raise BackendUnavailableError(f"Google Drive returned no FactKG files; download them by hand from "
                                          f"{FACTKG_DRIVE_FOLDER} into {folder}.")
        for path in Path(tmp).rglob("*"):
            if path.is_file() and path.name in FACTKG_FILES:
                os.replace(path, folder / path.name)
    if not all((folder / f).is_file() for f in FACTKG_FILES[:3]):
        raise IntegrityError(f"FactKG claim files are incomplete in {folder}; download them by hand from "
                             f"{FACTKG_DRIVE_FOLDER}.")


def _fetch_hf(group: str, folder: Path, log: Callable[[str], None], force: bool) -> None:
    """RoG's parquet shards from the Hugging Face hub into <folder>/data/ (needs huggingface_hub)."""
    if not force and all(any(folder.glob(f"data/{split}-*.parquet")) for split in ("train", "validation", "test")):
        return
    hub = require("huggingface_hub", "data", f"Downloading {group} from the Hugging Face hub")
    _check_reachable("https://huggingface.co", group, folder)
    repo_id, revision = HF_DATASETS[group]
    log(f"  {repo_id} @ {revision} (parquet shards)")
    try:
        hub.snapshot_download(repo_id=repo_id, repo_type="dataset", revision=revision, local_dir=str(folder),
                              allow_patterns=["data/*.parquet", "README.md"])
    except Exception as exc:  # the hub client raises many types (offline mode, HTTP, auth)
        raise BackendUnavailableError(f"download of {repo_id} failed ({exc.__class__.__name__}); unset HF_HUB_OFFLINE "
                                      f"or download it by hand from {GROUPS[group].page} into {folder}.") from None


def _fetch_iirc(folder: Path, log: Callable[[str], None], force: bool) -> None:
    """train.json / dev.json and context_articles.json from AI2's archives."""
    wanted = {"iirc_train_dev.tgz": ("train.json", "dev.json"), "context_articles.tar.gz": ("context_articles.json",)}
    for archive_name, members in wanted.items():
        if not force and all((folder / m).is_file() for m in members):
            continue
        _check_reachable(_IIRC, "iirc", folder)
        with tempfile.TemporaryDirectory(dir=folder) as tmp:
            archive = Path(tmp) / archive_name
            _download(f"{_IIRC}/{archive_name}", archive, log)
            _safe_extract(archive, Path(tmp) / "x")
            for m in members:
                found = [p for p in (Path(tmp) / "x").rglob(m) if p.is_file()]
                if not found:
                    raise IntegrityError(f"{archive_name} has no {m}; download IIRC by hand from "
                                         f"{GROUPS['iirc'].page}.")
                os.replace(found[0], folder / m)


# ----------------------------------------------------------------------------- public API


def fetch(name: str, dest: Path | str | None = None, force: bool = False,
          log: Callable[[str], None] = print) -> Path:
    """Download one dataset (or group, or "all") into `dest` (default: settings.data_dir()).

    Returns the dataset's folder. Raises BackendUnavailableError at once when offline,
    IntegrityError when a file does not verify, MissingDependencyError when MetaQA needs gdown.
    """
    if name == "all":
        failed: list[str] = []
        for group in GROUPS:
            try:
                fetch(group, dest, force, log)
            except KgragError as exc:
                log(f"{group}: FAILED: {exc}")
                failed.append(group)
        if failed:
            raise BackendUnavailableError(f"could not fetch {', '.join(failed)} (reasons above); the other groups are in place.")
        return Path(dest).expanduser().resolve() if dest is not None else settings.data_dir()
    group = group_of(name)
    g = GROUPS[group]
    base = Path(dest).expanduser().resolve() if dest is not None else settings.data_dir()
    folder = base / g.folder
    folder.mkdir(parents=True, exist_ok=True)
    log(f"fetching {group} into {folder}")
    todo = [f for f in g.files if force or not _file_ok(folder / f.dest, f)]
    if todo:
        _check_reachable(todo[0].url, group, folder)
    for spec in todo:
        target = folder / spec.dest
        _download(spec.url, target, log, sha256=spec.sha256)
        _verify(target, spec, hashed=True)
    for spec in g.files:
        if spec.lines is not None and spec not in todo:
            _verify(folder / spec.dest, spec)
    if g.special == "clutrr":
        _fetch_clutrr_data(folder, log, force)
    elif g.special == "metaqa":
        _fetch_metaqa(folder, log, force)
    elif g.special == "factkg":
        _fetch_factkg(folder, log, force)
    elif g.special == "hf":
        _fetch_hf(group, folder, log, force)
    elif g.special == "iirc":
        _fetch_iirc(folder, log, force)
    log(f"{group}: ok ({folder})")
    return folder


def status() -> list[dict]:
    """Registered real datasets: present or missing, where, and the download group and source page."""
    rows = []
    for row in list_datasets():
        if row["source"] != "real" or not row["path"]:
            continue
        group = group_of(row["name"])
        rows.append({**row, "group": group, "source_page": GROUPS[group].page, "license": GROUPS[group].license})
    return rows
