"""The readers of registered datasets: `read_<format>(spec, root, split, **options)` returns a `Dataset` (the
registry, `registry.py`, maps each name to its reader and checks the files first)."""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np

from ..errors import ConfigError, DatasetMissingError
from . import clutrr, ircot, metaqa, passages, pathquestion, userdata
from .items import Dataset
from .kgfiles import attach_answerable, kg_info, load_kg_file
from .spec import DatasetSpec, missing

__all__ = ["load_pq_file"]


def read_metaqa(spec: DatasetSpec, root: Path, split: str, variant: str = "vanilla",
                 answerable: bool = True) -> Dataset:
    hops = spec.params["hops"]
    if variant not in ("vanilla", "ntm"):
        raise ConfigError(f"MetaQA variant must be 'vanilla' or 'ntm' (got {variant!r}).")
    kb_path = metaqa.find_kb(root)
    try:
        questions, files = metaqa.read_questions(root, hops, split, variant, prefix=spec.name)
    except DatasetMissingError:
        raise missing(spec, root, f"{hops}-hop {variant} qa_{split}.txt") from None
    kg = load_kg_file(kb_path, sep="|", name="metaqa")
    if answerable:
        attach_answerable(questions, kg, files + [kb_path], tag=f"metaqa-{variant}")
    info = {"kb_file": kb_path.name, "qa_file": str(files[0].relative_to(root)),
            "has_chains": any(q.chain for q in questions), **kg_info(questions, kg)}
    return Dataset(name=spec.name, kind="kgqa", split=split, items=questions, kg=kg, source=spec.source,
                   root=root, info=info)


def load_pq_file(path: Path, kb: Path | None = None, split: str = "all", answerable: bool = True,
                 name: str | None = None, source: str = "real") -> Dataset:
    """Any question file in PathQuestion's line format (PQ, PQL, WC2014) with its KB."""
    path = Path(path)
    if not path.is_file():
        raise DatasetMissingError(f"question file {path} not found; pass an existing path=.")
    kb_path = Path(kb) if kb is not None else pathquestion.guess_kb(path)
    if not kb_path.is_file():
        raise DatasetMissingError(f"KB file {kb_path} not found; pass an existing kb=.")
    unparsed: list[tuple[int, str]] = []
    questions = pathquestion.read_pq_file(path, unparsed=unparsed)
    if unparsed:  # counted and reported, never dropped silently
        line, why = unparsed[0]
        warnings.warn(f"{path.name}: {len(unparsed)} line(s) do not parse and are left out "
                      f"(first: line {line}: {why}); see info['unparsed_lines'].", stacklevel=3)
    kg = load_kg_file(kb_path, sep="\t", name=kb_path.stem)
    if answerable:
        attach_answerable(questions, kg, [path, kb_path], tag="pq")
    keep = pathquestion.split_indices(len(questions), split)
    items = [questions[i] for i in keep]
    info = {"qa_file": path.name, "kb_file": kb_path.name, "n_file": len(questions) + len(unparsed),
            "unparsed_lines": len(unparsed), "unparsed_examples": [f"line {n}: {why}" for n, why in unparsed[:5]],
            "split_rule": (f"seeded shuffle (seed {pathquestion.PQ_SPLIT_SEED}) cut "
                           f"{'/'.join(str(int(f * 100)) for f in pathquestion.PQ_SPLIT_FRACTIONS)} "
                           "into train/dev/test by question index"),
            **kg_info(items, kg)}
    return Dataset(name=name or path.stem, kind="kgqa", split=split, items=items, kg=kg, source=source,
                   root=path.parent, info=info)


def read_pq(spec: DatasetSpec, root: Path, split: str, answerable: bool = True) -> Dataset:
    return load_pq_file(root / spec.params["file"], root / spec.params["kb"], split=split, answerable=answerable,
                        name=spec.name, source=spec.source)


def read_pq_any(spec: DatasetSpec, root: Path, split: str, path: str | Path | None = None,
                 kb: str | Path | None = None, answerable: bool = True) -> Dataset:
    if path is None:
        raise ConfigError("pq-file needs path=<question file> (and kb=<KB file> unless it sits beside it).")
    return load_pq_file(Path(path), Path(kb) if kb else None, split=split, answerable=answerable)


def read_clutrr(spec: DatasetSpec, root: Path, split: str, chain_lengths=None) -> Dataset:
    try:
        stories, files = clutrr.read_stories(root, split)
        rules = clutrr.load_rules(root)
    except DatasetMissingError:
        raise missing(spec, root, f"data_*/*_{split}.csv and clutrr_store/") from None
    if chain_lengths is not None:
        wanted = {int(chain_lengths)} if isinstance(chain_lengths, (int, np.integer)) else {int(c) for c in chain_lengths}
        stories = [s for s in stories if s.chain_length in wanted]
    counts: dict[int, int] = {}
    for s in stories:
        counts[s.chain_length] = counts.get(s.chain_length, 0) + 1
    info = {"files": [f.name for f in files], "by_chain_length": dict(sorted(counts.items())),
            "compositions": len(rules.compositions)}
    return Dataset(name=spec.name, kind="kinship", split=split, items=stories, rules=rules, source=spec.source,
                   root=root, info=info)


def _questions_file(spec: DatasetSpec, root: Path, questions: str | Path | None, default: str) -> Path:
    """The questions file: the registered one, or `questions=` (absolute, or relative to the dataset folder)."""
    if questions is None:
        return root / default
    path = Path(questions)
    path = path if path.is_absolute() else root / path
    if not path.is_file():
        raise DatasetMissingError(f"questions file {path} not found (dataset {spec.name!r}, option questions=).")
    return path


def read_hotpotqa(spec: DatasetSpec, root: Path, split: str, questions: str | Path | None = None) -> Dataset:
    qfile = _questions_file(spec, root, questions, spec.params["questions"])
    items = passages.read_hotpot_questions(qfile, prefix=spec.name)
    corpus = passages.read_corpus(root / spec.params["corpus"], id_by="title")
    return _passage_dataset(spec, root, split, items, corpus, None, {"questions_file": qfile.name})


def read_musique(spec: DatasetSpec, root: Path, split: str, openie: bool = True,
                  questions: str | Path | None = None) -> Dataset:
    qfile = _questions_file(spec, root, questions, spec.params["questions"])
    questions = passages.read_musique_questions(qfile)
    corpus = passages.read_corpus(root / spec.params["corpus"], id_by="title+text")
    triples, counts = None, {}
    if openie:
        found = sorted(root.glob(spec.params["openie"]))
        if found:
            triples, counts = passages.read_openie_triples(found[0])
            counts["openie_file"] = found[0].name
            counts["openie_passages_not_in_corpus"] = len(set(triples) - {p.pid for p in corpus})
    counts["questions_file"] = qfile.name
    return _passage_dataset(spec, root, split, questions, corpus, triples, counts)


def _2wiki_questions(path: Path) -> list:
    """2Wiki questions in either form: {question, supporting_titles} or the released 2WikiMultiHopQA
    records (context + supporting_facts, HotpotQA's layout)."""
    data = passages.read_json(path)
    first = data[0] if isinstance(data, list) and data else {}
    if isinstance(first, dict) and "supporting_titles" in first:
        return passages.read_title_questions(path, prefix="2wiki")
    return passages.read_hotpot_questions(path, prefix="2wiki")


def read_2wiki(spec: DatasetSpec, root: Path, split: str, questions: str | Path | None = None) -> Dataset:
    corpus = passages.read_corpus(root / spec.params["corpus"], id_by="title")
    if questions is not None:
        qfile = _questions_file(spec, root, questions, spec.params["questions"])
    else:
        small = root / spec.params["questions"]
        qfile = small if small.is_file() else root / spec.params["questions_full"]
    return _passage_dataset(spec, root, split, _2wiki_questions(qfile), corpus, None, {"questions_file": qfile.name})


def _passage_dataset(spec, root, split, questions, corpus, triples, extra) -> Dataset:
    pids = {p.pid for p in corpus}
    missing = sum(1 for q in questions for s in q.supporting if s not in pids)
    info = {"corpus_passages": len(corpus), "questions": len(questions),
            "supporting_not_in_corpus": missing, **extra}
    return Dataset(name=spec.name, kind="passages", split=split, items=questions, corpus=corpus, triples=triples,
                   source=spec.source, root=root, info=info)


def read_factkg(spec: DatasetSpec, root: Path, split: str, graph: str = "auto", relation_filter: bool = True,
                 kg: bool = True) -> Dataset:
    from . import factkg

    path = root / factkg.CLAIM_FILES[split]
    if not path.is_file():
        raise missing(spec, root, path.name)
    questions = factkg.claims_to_questions(factkg.read_claims(path), split, path, prefix=spec.name)
    info: dict = {"claims_file": path.name, "by_reasoning_type": {}}
    for q in questions:
        info["by_reasoning_type"][q.qtype] = info["by_reasoning_type"].get(q.qtype, 0) + 1
    kg_obj = None
    if kg:
        try:
            graph_path = factkg.find_graph(root, graph)
        except DatasetMissingError:
            raise missing(spec, root, " or ".join(factkg.GRAPH_FILES.values())) from None
        rel_path = root / factkg.RELATION_FILTER_FILE
        use_filter = relation_filter and rel_path.is_file()
        kg_obj, types, kg_info = factkg.load_dbpedia(graph_path, rel_path if use_filter else None)
        info.update(kg_info)
        info.update({"kg_entities": kg_obj.num_entities, "kg_facts": kg_obj.num_edges,
                     "kg_relations": kg_obj.num_relations, "entity_types": types})
    return Dataset(name=spec.name, kind="kgqa", split=split, items=questions, kg=kg_obj, source=spec.source,
                   root=root, info=info)


def read_rog(spec: DatasetSpec, root: Path, split: str, paths: bool = True) -> Dataset:
    """RoG's questions with their own subgraphs; a spec with params graph="union" also gets one KG, the union
    of the loaded questions' subgraphs, so that methods built for one KG (SimGRAG, vector rerank) run on it."""
    from . import rog

    file = spec.params.get("file")
    try:
        questions, graphs, info = rog.read_questions(root, split, prefix=spec.name, paths=paths, file=file)
    except DatasetMissingError:
        raise missing(spec, root, file or f"data/{split}-*.parquet") from None
    if paths and questions:
        info["answerable_rate"] = float(np.mean([bool(q.answerable) for q in questions]))
        info["answerable_any_rate"] = float(np.mean([q.meta["answerable_any"] for q in questions]))
    info["per_question_kg"] = "dataset.triples.kg(qid)"
    kg = None
    if spec.params.get("graph") == "union":
        kg = graphs.union_kg(name=spec.name)
        info["kg"] = f"the union of the {len(graphs)} questions' subgraphs: {kg.num_entities:,} entities, {kg.num_edges:,} facts"
    return Dataset(name=spec.name, kind="kgqa", split=split, items=questions, kg=kg, triples=graphs,
                   source=spec.source, root=root, info=info)


def read_user(spec: DatasetSpec, root: Path, split: str) -> Dataset:
    return userdata.load_folder(spec.name, split)


def read_ircot(spec: DatasetSpec, root: Path, split: str) -> Dataset:
    try:
        questions, corpus, info = ircot.read_questions(root, spec.params["ircot"])
    except DatasetMissingError:
        raise missing(spec, root, f"the IRCoT {spec.params['ircot']} annotation and prompt files") from None
    return _passage_dataset(spec, root, split, questions, corpus, None, info)


def read_rog_paths(spec: DatasetSpec, root: Path, split: str) -> Dataset:
    from . import rog_paths

    try:
        questions, info = rog_paths.read_questions(root, spec.params["benchmark"], split, prefix=spec.name)
    except DatasetMissingError:
        raise missing(spec, root, rog_paths.QUESTION_FILES[(spec.params["benchmark"], split)] + ".gz") from None
    return Dataset(name=spec.name, kind="kgqa", split=split, items=questions, source=spec.source, root=root, info=info)


def read_iirc(spec: DatasetSpec, root: Path, split: str, unanswerable: bool = False) -> Dataset:
    from . import iirc

    try:
        questions, corpus, info = iirc.read_questions(root, split, unanswerable=unanswerable, prefix=spec.name)
    except DatasetMissingError:
        raise missing(spec, root, f"{' or '.join(iirc.SPLIT_FILES[split])} and {iirc.ARTICLES_FILE}") from None
    return _passage_dataset(spec, root, split, questions, corpus, None, info)
