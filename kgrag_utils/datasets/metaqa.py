"""MetaQA: movie KB (`head|relation|tail`) and templated 1/2/3-hop questions.

Files, as the official release lays them out (and as the sample generator writes them):
    <root>/kb.txt or kb_reconstructed.txt
    <root>/qa/{k}-hop/vanilla/qa_{split}.txt     question with [topic]<TAB>ans1|ans2|...
    <root>/qa/{k}-hop/ntm/qa_{split}.txt         (optional paraphrased variant, same format)
    <root>/qa/{k}-hop/qa_{split}_qtype.txt       one type a line, e.g. actor_to_movie_to_director
The official archive puts the hop folders at the top level (<root>/{k}-hop/...); both are read.

A question type is a walk through the movie-centred KB: every fact has a movie as head, so
`movie_to_X` follows relation(X) forward and `X_to_movie` follows it backward.
"""

from __future__ import annotations

import re
from pathlib import Path

from ..errors import ConfigError, DatasetMissingError, IntegrityError
from .items import ChainStep, KGQuestion
from .textfiles import read_lines

__all__ = ["TYPE_RELATION", "qtype_to_chain", "parse_question_line", "read_questions",
           "find_kb", "find_qa_file", "find_qtype_file", "KB_FILES"]

#: Type word of a MetaQA question type -> KB relation (the hub type "movie" has none).
TYPE_RELATION: dict[str, str] = {
    "actor": "starred_actors",
    "director": "directed_by",
    "writer": "written_by",
    "year": "release_year",
    "language": "in_language",
    "tag": "has_tags",
    "tags": "has_tags",
    "genre": "has_genre",
    "imdbvotes": "has_imdb_votes",
    "imdbrating": "has_imdb_rating",
}
KB_FILES = ("kb.txt", "kb_reconstructed.txt")
_TOPIC = re.compile(r"\[([^\]]+)\]")


def qtype_to_chain(qtype: str) -> list[ChainStep]:
    """`actor_to_movie_to_director` -> [("starred_actors", False), ("directed_by", True)]."""
    words = [w.strip().lower() for w in qtype.strip().split("_to_")]
    if len(words) < 2:
        raise ConfigError(f"MetaQA question type {qtype!r} is not of the form a_to_b[_to_c...].")
    chain: list[ChainStep] = []
    for src, dst in zip(words, words[1:]):
        if src == "movie" and dst in TYPE_RELATION:
            chain.append((TYPE_RELATION[dst], True))
        elif dst == "movie" and src in TYPE_RELATION:
            chain.append((TYPE_RELATION[src], False))
        else:
            raise ConfigError(
                f"MetaQA question type {qtype!r}: step {src}->{dst} does not pass through 'movie' "
                f"with a known type word ({', '.join(sorted(TYPE_RELATION))})."
            )
    return chain


def parse_question_line(line: str) -> tuple[str, list[str], list[str]]:
    """(question, topic entities in brackets, answers) from `question<TAB>a|b|c`."""
    parts = line.rstrip("\r\n").split("\t")
    question = parts[0].strip()
    answers = [a.strip() for a in parts[1].split("|")] if len(parts) > 1 else []
    answers = [a for a in answers if a]
    topics = [m.strip() for m in _TOPIC.findall(question)]
    return question, topics, answers


def find_kb(root: Path) -> Path:
    """kb.txt (the original) wins over kb_reconstructed.txt; also looks in <root>/kb/."""
    for folder in (root, root / "kb"):
        for name in KB_FILES:
            if (folder / name).is_file():
                return folder / name
    raise DatasetMissingError(f"no MetaQA KB ({' or '.join(KB_FILES)}) under {root}")


def _hop_dirs(root: Path, hops: int) -> list[Path]:
    return [root / "qa" / f"{hops}-hop", root / f"{hops}-hop"]


def find_qa_file(root: Path, hops: int, split: str, variant: str = "vanilla") -> Path:
    for folder in _hop_dirs(root, hops):
        path = folder / variant / f"qa_{split}.txt"
        if path.is_file():
            return path
    raise DatasetMissingError(f"no MetaQA {hops}-hop {variant} qa_{split}.txt under {root}")


def find_qtype_file(root: Path, hops: int, split: str) -> Path | None:
    for folder in _hop_dirs(root, hops):
        path = folder / f"qa_{split}_qtype.txt"
        if path.is_file():
            return path
    return None


def _read_lines(path: Path) -> list[str]:
    return read_lines(path)  # newlines only: a U+2028 inside a question stays inside it


def read_questions(root: Path, hops: int, split: str, variant: str = "vanilla",
                   prefix: str | None = None) -> tuple[list[KGQuestion], list[Path]]:
    """All questions of one MetaQA file, in file order, and the files they were read from.

    qids are `<prefix>-<variant>-<split>-<line>` (prefix default `metaqa-<k>hop`).
    The chain comes from the aligned qtype file when present (else None). A line of a paraphrased
    variant without a bracketed topic takes the topic of the same line of the vanilla file.
    """
    qa_path = find_qa_file(root, hops, split, variant)
    files = [qa_path]
    lines = _read_lines(qa_path)
    qtype_path = find_qtype_file(root, hops, split)
    qtypes: list[str | None] = [None] * len(lines)
    if qtype_path is not None:
        qtypes = [(t.split() or [None])[0] for t in _read_lines(qtype_path)]  # first token of the line
        if len(qtypes) != len(lines):
            raise IntegrityError(
                f"{qtype_path} has {len(qtypes):,} lines but {qa_path} has {len(lines):,}: "
                f"the files are not aligned; re-fetch MetaQA with `kgrag data fetch metaqa --force`."
            )
        files.append(qtype_path)
    fallback_topics: list[list[str]] | None = None
    if variant != "vanilla":
        try:
            vanilla = find_qa_file(root, hops, split, "vanilla")
        except DatasetMissingError:
            vanilla = None
        if vanilla is not None:
            v_lines = _read_lines(vanilla)
            if len(v_lines) == len(lines):
                fallback_topics = [parse_question_line(v)[1] for v in v_lines]
                files.append(vanilla)
    chains: dict[str, list[ChainStep]] = {}
    out: list[KGQuestion] = []
    for i, line in enumerate(lines):
        question, topics, answers = parse_question_line(line)
        if not topics and fallback_topics is not None:
            topics = fallback_topics[i]
        qtype = qtypes[i]
        chain = None
        if qtype is not None:
            if qtype not in chains:
                chains[qtype] = qtype_to_chain(qtype)
            chain = list(chains[qtype])
        out.append(KGQuestion(
            qid=f"{prefix or f'metaqa-{hops}hop'}-{variant}-{split}-{i:05d}",
            question=question,
            topic_entities=topics,
            answers=answers,
            chain=chain,
            hops=len(chain) if chain else hops,
            qtype=qtype,
            meta={"line": i, "file": qa_path.name, "variant": variant,
                  "question_plain": _TOPIC.sub(lambda m: m.group(1), question)},
        ))
    return out, files
