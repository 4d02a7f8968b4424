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
from pathlib import Path
from typing import Callable

from .. import settings
from ..errors import BackendUnavailableError, ConfigError, IntegrityError, KgragError, require
from .registry import dataset_names, get_spec, list_datasets
from .sources import (CLUTRR_DATA_FOLDER, CLUTRR_DRIVE_FILE, CLUTRR_ROWS, FACTKG_DRIVE_FOLDER, FACTKG_FILES, GROUPS,
                      HF_DATASETS, IIRC_BASE, METAQA_DRIVE_FOLDER, METAQA_LINES, Group, RemoteFile, group_for_folder)
from .verify import verify_dataset

__all__ = ["RemoteFile", "Group", "GROUPS", "fetch", "fetch_and_accept", "status", "group_of", "accept_group"]

CONNECT_TIMEOUT_S = 5.0
READ_TIMEOUT_S = 60.0
#: pooch retries a download this many times after a network error or a checksum mismatch
DOWNLOAD_RETRIES = 2


def group_of(name: str) -> str:
    """Download group of a dataset name ('metaqa-2hop' -> 'metaqa'); group names map to themselves."""
    if name in GROUPS:
        return name
    spec = get_spec(name)
    if spec.source != "real" or not spec.folder:
        raise ConfigError(f"dataset {name!r} is not downloaded: {'it is generated on first use' if spec.source in ('sample', 'fixture') else 'it reads a file you name'}.")
    group = group_for_folder(spec.folder)
    if group is None:  # pragma: no cover
        raise ConfigError(f"no download source registered for {name!r}.")
    return group


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
        _check_reachable(IIRC_BASE, "iirc", folder)
        with tempfile.TemporaryDirectory(dir=folder) as tmp:
            archive = Path(tmp) / archive_name
            _download(f"{IIRC_BASE}/{archive_name}", archive, log)
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


def _snapshot(folder: Path) -> dict[Path, tuple[int, int, int]]:
    """(inode, size, mtime) of every regular file under a folder: what a fetch wrote is what changed."""
    out: dict[Path, tuple[int, int, int]] = {}
    if folder.is_dir():
        for p in folder.rglob("*"):
            try:
                st = p.lstat()
            except OSError:
                continue
            if p.is_file() and not p.is_symlink():
                out[p.resolve()] = (st.st_ino, st.st_size, st.st_mtime_ns)
    return out


def fetch_and_accept(name: str, force: bool = False, log: Callable[[str], None] = print) -> Path:
    """`kgrag data fetch NAME`: fetch, then take as the reference only the files this fetch wrote.

    A file the fetch left as it was (it looked complete) is verified against its pin or its first
    reference, never accepted: a fetch that wrote nothing accepts nothing, so a cut or edited copy is
    refused naming `--force` instead of becoming the reference. A written file with a pin must match it.
    """
    groups = list(GROUPS) if name == "all" else [group_of(name)]
    base = settings.data_dir()
    before = {g: _snapshot(base / GROUPS[g].folder) for g in groups}
    path = fetch(name, force=force, log=log)
    for g in groups:
        after = _snapshot(base / GROUPS[g].folder)
        written = {p for p, st in after.items() if before[g].get(p) != st}
        accept_group(g, written)
    return path


def accept_group(group: str, written: "set[Path] | None" = None) -> None:
    """After a fetch: every dataset of this download group is verified against its pins; of the files
    without a pin, those in `written` (what the fetch wrote; None: every file) become the reference.
    Raises the first file's IntegrityError (naming `kgrag data fetch GROUP --force`)."""
    for name in dataset_names("real"):
        try:
            if group_of(name) != group:
                continue
        except KgragError:
            continue
        spec = get_spec(name)
        if not (settings.data_dir() / spec.folder).is_dir():
            continue
        verify_dataset(spec, accept_changes=written if written is not None else True)
