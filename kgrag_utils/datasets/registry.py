"""Datasets by name: where each lives, how it is loaded, and a clear error when it is missing.

`load_dataset(name, split, limit, seed, **options)` returns a `Dataset`; `list_datasets()` says
which names exist, whether their files are present, and how to get them. Real benchmarks live
under `settings.data_dir()` (one folder each, as `kgrag data fetch NAME` lays them out); sample
datasets are generated on first use by `kgrag_utils.datasets.samples` in exactly the real file
formats and read by the same loaders.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any, Mapping

import numpy as np

from .. import settings
from ..errors import ConfigError, DatasetMissingError, KgragError, did_you_mean
from . import ircot, loaders, pathquestion, userdata
from .loaders import load_pq_file
from .kgfiles import load_kg_file
from .items import Dataset
from .spec import DatasetSpec, missing
from .traits import DatasetTraits, for_kind
from .verify import real_root, verify_dataset

__all__ = ["DatasetSpec", "load_dataset", "list_datasets", "dataset_names", "get_spec", "sample_items", "register_dataset",
           "load_kg_file", "load_pq_file", "training_dataset", "dataset_traits"]


# ----------------------------------------------------------------------------- the registry

_METAQA_KB = ("kb.txt", "kb_reconstructed.txt", "kb/kb.txt")


def _metaqa_required(k: int) -> tuple[tuple[str, ...], ...]:
    return (_METAQA_KB, (f"qa/{k}-hop/vanilla/qa_test.txt", f"{k}-hop/vanilla/qa_test.txt"))


_PASSAGE_SPLITS = ("test", "all")

_SPECS: dict[str, DatasetSpec] = {}

#: sources this project writes itself: "sample" (generated data, `sample-*`) and "fixture" (small files in a
#: benchmark's released format, `fixture-*`); "real" is a downloaded benchmark copy
GENERATED_SOURCES = ("sample", "fixture")


def _register(spec: DatasetSpec) -> None:
    """Add a spec, its traits resolved once: its own, else its twin's (registered before it), else its kind's."""
    if spec.traits is None:
        if spec.twin is not None and spec.twin not in _SPECS:
            raise ConfigError(f"dataset {spec.name!r}: its twin {spec.twin!r} must be registered before it.")
        traits = _SPECS[spec.twin].traits if spec.twin is not None else for_kind(spec.kind)
        spec = dataclasses.replace(spec, traits=traits)
    _SPECS[spec.name] = spec


def register_dataset(spec: DatasetSpec) -> DatasetSpec:
    """Register a dataset from its own loader module (docs/EXTENDING.md#recipes, "A dataset"), its traits resolved
    as `_register` resolves them. A name registered with another loader is refused in one line (pick another
    name): two datasets under one name cannot replace each other silently; the same module imported again can."""
    if not isinstance(spec, DatasetSpec):
        raise ConfigError(f"register_dataset takes a DatasetSpec, not {type(spec).__name__}.")
    known = _SPECS.get(spec.name)
    if known is not None and known.loader is not spec.loader:
        raise ConfigError(f"dataset name {spec.name!r} is taken ({known.description}): give the dataset another name.")
    _register(spec)
    return _SPECS[spec.name]


for _k in (1, 2, 3):
    _register(DatasetSpec(
        name=f"metaqa-{_k}hop", kind="kgqa", source="real", folder="MetaQA", required=_metaqa_required(_k),
        loader=loaders.read_metaqa, splits=("dev", "test"), options=("variant", "answerable"), params={"hops": _k},
        traits=DatasetTraits(shot_family="movies"),
        description=f"MetaQA {_k}-hop movie questions over the MetaQA KB (variant='ntm' for paraphrases)"))
    _register(DatasetSpec(
        name=f"sample-movies-{_k}hop", kind="kgqa", source="sample", folder="MetaQA", required=_metaqa_required(_k),
        loader=loaders.read_metaqa, splits=("dev", "test"), options=("variant", "answerable"), params={"hops": _k},
        sample_key="movies", twin=f"metaqa-{_k}hop", description=f"generated movie KG with {_k}-hop questions in MetaQA's format"))
for _k in (2, 3):
    _register(DatasetSpec(
        name=f"pq-{_k}hop", kind="kgqa", source="real", folder="PathQuestion",
        required=((f"PQ-{_k}H.txt",), (f"{_k}H-kb.txt",)), loader=loaders.read_pq, splits=pathquestion.SPLITS,
        options=("answerable",), params={"file": f"PQ-{_k}H.txt", "kb": f"{_k}H-kb.txt"},
        traits=DatasetTraits(shot_family="people"),
        description=f"PathQuestion {_k}-hop (Freebase subset); seeded 80/10/10 split"))
for _suffix, _file in (("1hop", "WC-P1.txt"), ("2hop", "WC-P2.txt"), ("conj", "WC-C.txt")):
    _register(DatasetSpec(
        name=f"wc2014-{_suffix}", kind="kgqa", source="real", folder="WC2014", required=((_file,), ("WC2014.txt",)),
        loader=loaders.read_pq, splits=pathquestion.SPLITS, options=("answerable",),
        params={"file": _file, "kb": "WC2014.txt"}, traits=DatasetTraits(shot_family="people"),
        description=f"WorldCup2014 ({_suffix}) questions from the IRN repository; seeded 80/10/10 split"))
    _register(DatasetSpec(
        name=f"fixture-wc2014-{_suffix}", kind="kgqa", source="fixture", folder="WC2014",
        required=((_file,), ("WC2014.txt",)), loader=loaders.read_pq, splits=pathquestion.SPLITS, options=("answerable",),
        params={"file": _file, "kb": "WC2014.txt"}, sample_key="fixture-wc2014", twin=f"wc2014-{_suffix}",
        description=f"a small generated football world in the released format of WC2014 ({_suffix})"))
_register(DatasetSpec(
    name="pq-file", kind="kgqa", source="real", folder="", required=(), loader=loaders.read_pq_any,
    splits=pathquestion.SPLITS, options=("path", "kb", "answerable"),
    description="any file in PathQuestion's line format: load_dataset('pq-file', split='all', path=..., kb=...)"))
_register(DatasetSpec(
    name="clutrr", kind="kinship", source="real", folder="CLUTRR",
    required=(("data_*/*_test.csv",), ("clutrr_store/rules_store.yaml",)), loader=loaders.read_clutrr,
    splits=("train", "test"), options=("chain_lengths",),
    description="CLUTRR kinship stories (train: chains of 2-3, test: 2-7) with the rule store"))
_register(DatasetSpec(
    name="sample-kinship", kind="kinship", source="sample", folder="CLUTRR",
    required=(("data_*/*_test.csv",), ("clutrr_store/rules_store.yaml",)), loader=loaders.read_clutrr,
    splits=("train", "test"), options=("chain_lengths",), sample_key="kinship", twin="clutrr",
    description="generated kinship stories in CLUTRR's format"))
_register(DatasetSpec(
    name="hotpotqa", kind="passages", source="real", folder="HotpotQA",
    required=(("hipporag_hotpotqa_train_100q.json",), ("hipporag_hotpotqa_train_corpus.json",)),
    loader=loaders.read_hotpotqa, splits=_PASSAGE_SPLITS, options=("questions",),
    params={"questions": "hipporag_hotpotqa_train_100q.json", "corpus": "hipporag_hotpotqa_train_corpus.json"},
    traits=DatasetTraits(gold_unit="title"),
    description="HotpotQA: HippoRAG's 100-question sample (distractor format) and its 994-title corpus"))
_register(DatasetSpec(
    name="musique", kind="passages", source="real", folder="MuSiQue",
    required=(("hipporag_musique_train_100q.json",), ("hipporag_musique_train_corpus.json",)),
    loader=loaders.read_musique, splits=_PASSAGE_SPLITS, options=("openie", "questions"),
    params={"questions": "hipporag_musique_train_100q.json", "corpus": "hipporag_musique_train_corpus.json",
            "openie": "hipporag_openie_musique_*.json"},
    description="MuSiQue: HippoRAG's 100-question sample, 1,890-passage corpus and its OpenIE triples"))
_register(DatasetSpec(
    name="2wiki", kind="passages", source="real", folder="2WikiMultiHopQA",
    required=(("hipporag_2wikimultihopqa_corpus.json",),
              ("2wiki_50q_supporting_titles.json", "2wikimultihopqa.json")),
    loader=loaders.read_2wiki, splits=_PASSAGE_SPLITS, options=("questions",),
    params={"corpus": "hipporag_2wikimultihopqa_corpus.json", "questions": "2wiki_50q_supporting_titles.json",
            "questions_full": "2wikimultihopqa.json"},
    traits=DatasetTraits(gold_unit="title"),
    description="2WikiMultiHopQA: HippoRAG's 6,119-passage corpus with 50 questions (gold titles, no answers)"))
_register(DatasetSpec(
    name="sample-passages", kind="passages", source="sample", folder="SamplePassages",
    required=(("sample_questions.json",), ("sample_corpus.json",)), loader=loaders.read_musique,
    splits=_PASSAGE_SPLITS, options=("openie", "questions"), sample_key="passages", twin="musique",
    params={"questions": "sample_questions.json", "corpus": "sample_corpus.json", "openie": "sample_openie.json"},
    description="generated passage questions in MuSiQue/HippoRAG's format, with OpenIE triples"))

for _name, _ircot in ircot.IRCOT_DATASETS.items():
    _register(DatasetSpec(
        name=_name, kind="passages", source="real", folder="IRCoT_demos",
        required=((f"prompt_generator/data_annotations/{_ircot}.jsonnet",),
                  (f"prompts/{_ircot}/gold_with_3_distractors_context_cot_qa_codex.txt",)),
        loader=loaders.read_ircot, splits=("train",), params={"ircot": _ircot},
        twin={pool: evaluated for evaluated, pool in ircot.POOL_FOR.items()}[_name],
        description=f"IRCoT's annotated {_ircot} TRAINING questions (gold + 3 distractor paragraphs, reasoning "
                    "steps): demonstrations (demo_pool='ircot'), not an evaluation set"))

_TEST18 = "gcr-dca/webqsp_test18_rog_format.jsonl.gz"


def _rog_path_files(benchmark: str) -> tuple[str, ...]:
    """The question file of a benchmark's test split, gzipped or as released (either is read)."""
    from .rog_paths import QUESTION_FILES

    rel = QUESTION_FILES[(benchmark, "test")]
    return (f"{rel}.gz", rel)


_FACTKG_REQUIRED = (("factkg_test.pickle",), ("dbpedia_2015_undirected_light.pickle", "dbpedia_2015_undirected.pickle"))
_IIRC_REQUIRED = (("dev.json", "iirc_train_dev/dev.json"), ("context_articles.json",))

for _source, _prefix in (("real", ""), ("fixture", "fixture-")):  # each fixture after its real twin
    _fixture = "a small fixture in the released format of " if _source == "fixture" else ""
    _register(DatasetSpec(
        name=f"{_prefix}factkg", kind="kgqa", source=_source, folder="FactKG", required=_FACTKG_REQUIRED,
        loader=loaders.read_factkg, splits=("train", "dev", "test"), options=("graph", "relation_filter", "kg"),
        sample_key="fixture-factkg" if _source == "fixture" else None,
        traits=DatasetTraits(task="verify", shot_family="claims") if not _prefix else None,
        twin="factkg" if _prefix else None,
        description=f"{_fixture}FactKG claims (True/False) over DBpedia 2015 (entity -> relation -> neighbours)"))
    for _name, _folder, _title in (("webqsp", "RoG-webqsp", "WebQSP"), ("cwq", "RoG-cwq", "CWQ")):
        _register(DatasetSpec(
            name=f"{_prefix}{_name}", kind="kgqa", source=_source, folder=_folder,
            required=(("data/test-*.parquet", "test-*.parquet"),), loader=loaders.read_rog,
            splits=("train", "validation", "test"), options=("paths",),
            sample_key=f"fixture-{_name}" if _source == "fixture" else None,
            traits=DatasetTraits(question_style="human") if not _prefix else None, twin=_name if _prefix else None,
            description=f"{_fixture}{_title} as released by RoG: per-question Freebase subgraphs (parquet)"))
    for _name, _bench, _splits in (("webqsp-paths", "webqsp", ("train", "validation", "test")),
                                   ("cwq-paths", "cwq", ("test",))):
        _register(DatasetSpec(
            name=f"{_prefix}{_name}", kind="kgqa", source=_source, folder="WebQSP_CWQ",
            required=(_rog_path_files(_bench),), loader=loaders.read_rog_paths, splits=_splits,
            params={"benchmark": _bench}, sample_key="fixture-webqsp_cwq" if _source == "fixture" else None,
            traits=DatasetTraits(question_style="human") if not _prefix else None, twin=_name if _prefix else None,
            description=f"{_fixture}every RoG-{_bench} question of {'/'.join(_splits)} with RoG's gold relation "
                        "paths (no subgraphs: chain prediction only; answers on test)"))
    _register(DatasetSpec(
        name=f"{_prefix}webqsp-test18", kind="kgqa", source=_source, folder="WebQSP_CWQ",
        required=((_TEST18,),), loader=loaders.read_rog, splits=("test",), options=("paths",), params={"file": _TEST18},
        sample_key="fixture-webqsp_cwq" if _source == "fixture" else None,
        traits=DatasetTraits(question_style="human") if not _prefix else None,
        twin="webqsp-test18" if _prefix else None,
        description=f"{_fixture}the 18 WebQSP test questions with whole RoG Freebase subgraphs (JSON lines in RoG form)"))
    _register(DatasetSpec(
        name=f"{_prefix}webqsp-test18-kg", kind="kgqa", source=_source, folder="WebQSP_CWQ",
        required=((_TEST18,),), loader=loaders.read_rog, splits=("test",), options=("paths",),
        params={"file": _TEST18, "graph": "union"},
        sample_key="fixture-webqsp_cwq" if _source == "fixture" else None,
        traits=DatasetTraits(question_style="human") if not _prefix else None,
        twin="webqsp-test18-kg" if _prefix else None,
        description=f"{_fixture}the same 18 WebQSP test questions over ONE KG, the union of their 18 Freebase subgraphs "
                    "(each question also sees the other 17 subgraphs' facts), for the methods built for one KG"))
    _register(DatasetSpec(
        name=f"{_prefix}iirc", kind="passages", source=_source, folder="IIRC", required=_IIRC_REQUIRED,
        loader=loaders.read_iirc, splits=("train", "dev", "test"), options=("unanswerable",),
        sample_key="fixture-iirc" if _source == "fixture" else None,
        traits=DatasetTraits(page_key="title") if not _prefix else None, twin="iirc" if _prefix else None,
        description=f"{_fixture}IIRC questions with their main passage and linked documents"))


def dataset_names(source: str | None = None, kind: str | None = None) -> list[str]:
    return [n for n, s in _SPECS.items() if (source is None or s.source == source) and (kind is None or s.kind == kind)]


def dataset_traits(name: str, kind: str = "kgqa") -> DatasetTraits:
    """The traits of a dataset known by name only: its registered spec's, else the defaults of `kind`."""
    spec = _SPECS.get(str(name))
    return spec.traits if spec is not None else for_kind(kind)


def get_spec(name: str) -> DatasetSpec:
    if name in _SPECS:
        return _SPECS[name]
    if userdata.is_folder_name(name):  # a dataset folder of your own (datasets/userdata.py)
        return DatasetSpec(name=name, kind=userdata.folder_kind(name), source="user", folder=name, required=(),
                           loader=loaders.read_user, splits=userdata.SPLITS, description=f"your own dataset folder {name}",
                           traits=for_kind(userdata.folder_kind(name)))
    tip = did_you_mean(name, _SPECS, n=3, cutoff=0.5) or f"known: {', '.join(_SPECS)}"
    raise ConfigError(f"unknown dataset {name!r}: {tip}")


def _present(spec: DatasetSpec, root: Path) -> bool:
    if not root.is_dir():
        return False
    return all(any(next(iter(root.glob(g)), None) is not None for g in alternatives) for alternatives in spec.required)


def _check_regular(spec: DatasetSpec, root: Path) -> None:
    """Every file a real dataset requires is a regular file (a folder, a FIFO, a device or a link to one in
    its place would fail late, or hang a reader): else one line naming it and the refetch."""
    for alternatives in spec.required:
        for pattern in alternatives:
            for path in sorted(root.glob(pattern)):
                if path.is_file():
                    continue
                what = "a folder" if path.is_dir() else "not a regular file (a FIFO, a device, or a link to one)"
                raise DatasetMissingError(
                    f"{path} is {what}, not the dataset file {spec.name!r} reads: put the file there with "
                    f"`kgrag data fetch {spec.name} --force` (or set KGRAG_DATA_DIR to the folder that holds it).")


def require_present(name: str) -> None:
    """A real dataset's files are in the data folder and verify (one-line error naming the fetch otherwise).

    Sample and fixture datasets are generated on first use, so they always count as present.
    """
    spec = get_spec(name)
    if spec.source == "user":
        userdata.validate_folder(name)  # every file read and checked: one line naming the file, the line, the fix
        return
    if spec.source in GENERATED_SOURCES or not spec.folder:
        return
    root = real_root(spec)
    if not _present(spec, root):
        raise missing(spec, root)
    _check_regular(spec, root)
    verify_dataset(spec)




def _sample_root(spec: DatasetSpec) -> Path:
    if spec.sample_key and spec.sample_key.startswith("fixture-"):
        from .fixtures import ensure_fixture

        return Path(ensure_fixture(spec.sample_key[len("fixture-"):])) / spec.folder
    try:
        from .samples import ensure_sample
    except ImportError as exc:  # pragma: no cover - the generator ships with the package
        raise KgragError(f"the sample generator is not available ({exc}); reinstall the project.") from exc
    return Path(ensure_sample(spec.sample_key)) / spec.folder


def sample_items(items: list, limit: int | None, seed: int = 0, take: int = 0) -> tuple[list, np.ndarray]:
    """A seeded random subset of `limit` items, kept in their original order (all when limit is None or 0), then
    its first `take` (0 = all of it): "the first 50 of the seeded 100" is limit=100, take=50."""
    n = len(items)
    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, (int, np.integer)) or limit < 0):
        raise ConfigError(f"limit must be a non-negative int (0 = all) or None (got {limit!r}).")
    if isinstance(take, bool) or not isinstance(take, (int, np.integer)) or take < 0:
        raise ConfigError(f"take must be a non-negative int (0 = the whole sample), got {take!r}.")
    if not limit or limit >= n:
        keep = np.arange(n)
    else:
        keep = np.sort(np.random.default_rng(seed).choice(n, size=int(limit), replace=False))
    keep = keep[:take] if take else keep
    return [items[i] for i in keep], keep


def load_dataset(name: str, split: str = "test", limit: int | None = None, seed: int = 0, take: int = 0,
                 **options) -> Dataset:
    """Load a registered dataset split; `limit` keeps a seeded random sample in file order (None or 0 = all),
    `take` then keeps the first `take` of that sample (0 = all of it): the sample is defined by (limit, seed)
    alone, so a cut of it is a subset of the same questions (`sample_items`).

    Options by dataset: MetaQA `variant` ("vanilla" | "ntm"), `answerable` (compute the flag,
    default True); CLUTRR `chain_lengths` (int or list); MuSiQue `openie` (default True);
    HotpotQA / MuSiQue / 2Wiki `questions` (another questions file in the same format, absolute or
    relative to the dataset folder, e.g. all of 2WikiMultiHopQA's dev set);
    pq-file `path` and `kb`; FactKG `graph` ("auto" | "light" | "full"), `relation_filter`, `kg`;
    WebQSP/CWQ `paths` (shortest topic-to-answer chains, default True); IIRC `unanswerable`. Missing files raise DatasetMissingError naming the fetch command.
    """
    spec = get_spec(name)
    if split not in spec.splits:
        raise ConfigError(f"dataset {name!r} has splits {', '.join(spec.splits)} (got {split!r}).")
    unknown = sorted(set(options) - set(spec.options))
    if unknown:
        accepted = ", ".join(spec.options) or "none"
        raise ConfigError(f"dataset {name!r} does not take option(s) {', '.join(unknown)} (accepted: {accepted}).")
    if spec.source in GENERATED_SOURCES:
        root = _sample_root(spec)
        if not _present(spec, root):
            raise missing(spec, root)
    elif spec.source == "user":
        root = userdata.resolve_folder(name)
    elif spec.folder:
        root = real_root(spec)
        if not _present(spec, root):
            raise missing(spec, root)
        _check_regular(spec, root)
        verify_dataset(spec)  # cut or edited files: one line naming the file and the refetch
    else:
        root = settings.data_dir()
    ds = spec.loader(spec, root, split, **options)
    ds.traits = spec.traits
    n_total = len(ds.items)
    ds.items, kept = sample_items(ds.items, limit, seed, take)
    ds.info.update({"registered_name": spec.name, "n_total": n_total, "n_items": len(ds.items), "limit": limit,
                    "seed": seed, "options": dict(options), **({"take": take} if take else {})})
    if ds.kind == "kgqa" and limit is not None and ds.items and ds.items[0].answerable is not None:
        ds.info["answerable_rate"] = float(np.mean([q.answerable for q in ds.items]))
        ds.info["answerable_khop_rate"] = float(np.mean([q.meta.get("answerable_khop", False) for q in ds.items]))
    return ds


#: Options that say where the data comes from (a file, a KG, a corpus): a training split takes them over from
#: its evaluation. Every other option (MetaQA's `variant`, CLUTRR's `chain_lengths`, another `questions` file,
#: `answerable`, ...) applies to the split it was given for only.
SOURCE_OPTIONS = frozenset({"path", "kb", "graph", "relation_filter", "kg", "openie"})


def training_dataset(dataset: Dataset, split: str | None = None, options: Mapping[str, Any] | None = None) -> Dataset:
    """The training split that belongs to a loaded dataset: the same registered name and data source
    (`SOURCE_OPTIONS` of its options), split `split` or the first of 'train' / 'dev' it has, and the training
    options `options` (e.g. {"variant": "ntm"} to train on MetaQA's paraphrases too; default: none).

    A `pq-file` dataset evaluated on its seeded 'dev' or 'test' cut trains on the same file's 'train'
    cut; evaluated whole (`split='all'`), it trains on a file beside it whose name says train where
    its own says test (`X-test.txt` -> `X-train.txt`, `test.txt` -> `train.txt`). Anything else
    raises a one-line ConfigError saying how to give the training data.
    """
    name = dataset.info.get("registered_name", dataset.name)
    if userdata.is_folder_name(name) and split in (None, "train"):  # the file's training questions, chains found
        train = load_dataset(name, split="train", **dict(options or {}))
        train.items = userdata.training_chains(train.items, train.kg)
        return train
    if name not in _SPECS:
        raise ConfigError(f"dataset {dataset.name!r} was not loaded by name: pass its training split yourself "
                          "(train=load_dataset(NAME, split='train', ...)).")
    spec = _SPECS[name]
    unknown = sorted(set(options or {}) - set(spec.options))
    if unknown:
        raise ConfigError(f"dataset {name!r} does not take training option(s) {', '.join(unknown)} "
                          f"(accepted: {', '.join(spec.options) or 'none'}).")
    if split is not None and split not in spec.splits:
        raise ConfigError(f"dataset {name!r} has no training split {split!r}; its splits: {', '.join(spec.splits)}.")
    evaluated = dict(dataset.info.get("options") or {})
    options = {**{k: v for k, v in evaluated.items() if k in SOURCE_OPTIONS}, **dict(options or {})}
    if spec.kind == "kgqa" and "answerable" in spec.options:
        options.setdefault("answerable", False)  # the training split needs no answerable flag
    if split is None:
        split = next((s for s in ("train", "dev") if s in spec.splits), None)
        if split is None:
            raise ConfigError(f"dataset {name!r} has no train or dev split to learn from; pass train= yourself.")
    if name == "pq-file" and dataset.split in ("all", "train"):
        path = Path(options.get("path", ""))
        stem = path.stem
        swapped = stem.replace("test", "train").replace("TEST", "TRAIN").replace("Test", "Train")
        beside = path.with_name(swapped + path.suffix) if swapped != stem else None
        if beside is None or not beside.is_file():
            raise ConfigError(
                f"pq-file {path.name} split {dataset.split!r} has no training split: evaluate split='test' (the "
                "file's seeded 80/10/10 cut trains on its 'train' part), put a training file beside it "
                f"({beside.name if beside else 'a name with train where this one says test'}), or pass "
                "train=load_dataset('pq-file', split='all', path=TRAINING_FILE, kb=...).")
        return load_dataset("pq-file", split="all", **{**options, "path": str(beside)})
    if split == dataset.split:
        raise ConfigError(f"{dataset.name!r} split {split!r} is the training split: evaluate on another split "
                          f"({', '.join(s for s in spec.splits if s != split)}).")
    return load_dataset(name, split=split, **options)


def list_datasets() -> list[dict]:
    """One row per registered name: name, kind, source, present, path, how to get it, description."""
    rows = []
    for spec in _SPECS.values():
        if spec.source in GENERATED_SOURCES:
            root = settings.sample_dir(create=False) / spec.folder
            module = "fixtures" if (spec.sample_key or "").startswith("fixture-") else "samples"
            how = f"generated on first use (kgrag_utils.datasets.{module})"
        elif spec.folder:
            root = real_root(spec)
            how = f"kgrag data fetch {spec.name}"
        else:
            root, how = None, "load_dataset('pq-file', path=..., kb=...)"
        rows.append({"name": spec.name, "kind": spec.kind, "source": spec.source,
                     "present": bool(root is not None and _present(spec, root)),
                     "path": str(root) if root is not None else "", "how": how, "splits": list(spec.splits),
                     "description": spec.description})
    return rows
