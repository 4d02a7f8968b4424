"""Small files in exactly the released formats of FactKG, RoG-WebQSP, RoG-CWQ, IIRC and WC2014.

Why: those benchmarks are not on the development machines, yet their loaders and the notebooks'
code paths must be exercised. `ensure_fixture(kind)` writes one fixture under
`settings.sample_dir()` (beside the sample-* datasets, same folder names as the real copies under
the data directory) and the registered names fixture-factkg, fixture-webqsp, fixture-cwq and
fixture-iirc read it with the same loaders as factkg, webqsp, cwq and iirc.

The content is hand-written (a few DBpedia-like facts and claims, Freebase-like subgraphs with CVT
ids, two linked Wikipedia-like articles); it is small on purpose and says nothing about the real
data. Generation is deterministic: the same bytes on every call with the same Python and pyarrow
(pickles use protocol 4; parquet is written without timestamps). Writes are atomic and a marker
with the files' sizes and digests is written last, as for the sample datasets.

The worlds themselves live in `fixture_graphs` (FactKG, RoG, WC2014) and `fixture_passages`
(IIRC); this module names the kinds and writes them.

Layouts:
* factkg -> FactKG/: factkg_{train,dev,test}.pickle, dbpedia_2015_undirected.pickle,
  dbpedia_2015_undirected_light.pickle, relations_for_final.pickle
* webqsp -> RoG-webqsp/data/{train,validation,test}-00000-of-00001.parquet (cwq -> RoG-cwq/...)
* iirc -> IIRC/: train.json, dev.json, iirc_test.json, context_articles.json
* webqsp_cwq -> WebQSP_CWQ/: the shared copy's gzipped RoG path files, test answers, CWQ topics and the
  whole-subgraph file (fixture_webqsp_cwq; registered as fixture-webqsp-paths, fixture-cwq-paths,
  fixture-webqsp-test18, fixture-webqsp-test18-kg)
* wc2014 -> WC2014/: WC2014.txt (KB), WC-P1.txt, WC-P2.txt, WC-C.txt (conjunctive: two paths joined by
  '*', each ending at the answer); a generated football world (invented players, clubs, countries)
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Callable

from .. import settings
from ..errors import ConfigError
from ..fileio import atomic_write_bytes
from .fixture_graphs import factkg_world, generate_cwq, generate_factkg, generate_wc2014, generate_webqsp, rog_questions, \
    wc2014_world
from .fixture_passages import generate_iirc, iirc_world
from .fixture_webqsp_cwq import generate_webqsp_cwq

__all__ = ["FIXTURE_KINDS", "FIXTURE_VERSION", "FIXTURE_FOLDERS", "generate_fixture", "ensure_fixture",
           "fixture_is_current", "factkg_world", "rog_questions", "iirc_world", "wc2014_world"]

FIXTURE_VERSION = 1
_MARKER_DIR = ".sample-markers"

# ----------------------------------------------------------------------------- writing

FIXTURE_KINDS: dict[str, Callable[..., dict[str, bytes]]] = {
    "factkg": generate_factkg, "webqsp": generate_webqsp, "cwq": generate_cwq, "iirc": generate_iirc,
    "wc2014": generate_wc2014, "webqsp_cwq": generate_webqsp_cwq,
}
FIXTURE_FOLDERS = {"factkg": "FactKG", "webqsp": "RoG-webqsp", "cwq": "RoG-cwq", "iirc": "IIRC", "wc2014": "WC2014",
                   "webqsp_cwq": "WebQSP_CWQ"}


def _check(kind: str) -> None:
    if kind not in FIXTURE_KINDS:
        raise ConfigError(f"unknown fixture kind {kind!r}: use one of {', '.join(FIXTURE_KINDS)}.")


def generate_fixture(kind: str) -> dict[str, bytes]:
    """Relative path -> bytes of one fixture, without writing anything."""
    _check(kind)
    return FIXTURE_KINDS[kind]()


def _marker(kind: str, root: Path) -> Path:
    return root / _MARKER_DIR / f"fixture-{kind}.json"


def fixture_is_current(kind: str, root: Path | None = None) -> bool:
    """True when the fixture's marker has this version and every listed file has its recorded size and sha256."""
    _check(kind)
    base = settings.sample_dir(create=False) if root is None else Path(root)
    try:
        marker = json.loads(_marker(kind, base).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    if not isinstance(marker, dict) or marker.get("version") != FIXTURE_VERSION:
        return False
    from ..integrity import files_match

    return files_match(base, marker.get("files"))  # size and sha256 (re-hashed only after a change of size or mtime)


def ensure_fixture(kind: str, force: bool = False) -> Path:
    """Write fixture `kind` under the sample folder if missing or outdated; return the sample root."""
    _check(kind)
    root = settings.sample_dir(create=True)
    if not force and fixture_is_current(kind, root):
        return root
    files = generate_fixture(kind)
    for rel, data in files.items():
        atomic_write_bytes(root / rel, data)
    marker = {"kind": f"fixture-{kind}", "version": FIXTURE_VERSION,
              "files": {rel: {"size": len(data), "sha256": hashlib.sha256(data).hexdigest()}
                        for rel, data in sorted(files.items())}}
    atomic_write_bytes(_marker(kind, root), (json.dumps(marker, indent=1, sort_keys=True) + "\n").encode("utf-8"))
    return root
