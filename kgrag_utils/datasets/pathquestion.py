"""PathQuestion (IRN) and files in its line format (PQL, WC2014): path questions over small KBs.

Line format (tab-separated; PathQuestion):
    question<TAB>answer(alt1/alt2/)<TAB>topic#rel1#e1#rel2#answer#<end>#answer
WC2014 files put the answer set in a fourth column and add more columns after it:
    question<TAB>answer<TAB>path<TAB>alt1/alt2/<TAB>facts...
and conjunctive questions (WC-C) join two paths with '*', each ending at the answer
(`POS#plays_position_inverse#P#<end>#P*CLUB#plays_in_club_inverse#P#<end>#P`): such a question
gets `chain=None` and one branch (topic, chain) per path (`KGQuestion.branches`). The KB is one `head<TAB>rel<TAB>tail`
fact a line (2H-kb.txt, 3H-kb.txt, WC2014.txt).

The answer set in parentheses holds every entity the path reaches (e.g. both "male" and "female"
when a person has children of both genders); `answers` is the main answer followed by the rest
of that set. The main answer is the path's last entity, which may hold parentheses of its own
(`Big_(film)(Big_(film)/)`); a line that still does not parse is left out and counted by the
loader (`info["unparsed_lines"]`), never dropped silently. The question text is kept as in the file (topic names keep their underscores).

There is no official split: `split_indices` shuffles question indices with a fixed seed and cuts
80/10/10 into train/dev/test (the proportions IRN used), so every run sees the same split.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np

from ..errors import ConfigError, DatasetMissingError
from .items import KGQuestion
from .textfiles import read_lines

__all__ = ["parse_path", "parse_pq_line", "split_answer_field", "read_pq_file", "guess_kb", "split_indices",
           "PQ_SPLIT_SEED", "PQ_SPLIT_FRACTIONS", "SPLITS"]

PQ_SPLIT_SEED = 20190101  # fixed: the split must not move when a user changes the sampling seed
PQ_SPLIT_FRACTIONS = (0.8, 0.1, 0.1)
SPLITS = ("train", "dev", "test", "all")


def _answer_set(text: str) -> list[str]:
    return [a.strip() for a in text.split("/") if a.strip()]


def parse_path(path: str) -> tuple[str, list[str], list[str]]:
    """`topic#r1#e1#r2#e2#<end>#e2` -> (topic, [r1, r2], [e1, e2])."""
    tokens = [t.strip() for t in path.strip().split("#")]
    if "<end>" in tokens:
        tokens = tokens[: tokens.index("<end>")]
    while tokens and not tokens[-1]:
        tokens.pop()
    if len(tokens) < 3 or len(tokens) % 2 == 0:
        raise ConfigError(f"path {path[:80]!r} is not of the form topic#rel#entity[#rel#entity...]")
    return tokens[0], tokens[1::2], tokens[2::2]


def split_answer_field(field: str, answer: str) -> tuple[str, list[str]]:
    """(main answer, alternatives) of an answer field, guided by the path's answer.

    The released format writes `answer(alt1/alt2/)`, and entity names may hold parentheses
    themselves: `Big_(film)(Big_(film)/)` is the answer `Big_(film)` with one alternative. The
    path's last entity is the answer, so the field must be that name, optionally followed by one
    parenthesised list of alternatives (names split on '/'). Anything else raises ConfigError.
    """
    field = field.strip()
    if field == answer:
        return answer, []
    rest = field[len(answer):].strip() if answer and field.startswith(answer) else None
    if rest is not None and rest.startswith("(") and rest.endswith(")"):
        return answer, _answer_set(rest[1:-1])
    raise ConfigError(f"answer field {field[:80]!r} is not the path's answer {answer[:60]!r} "
                      "followed by '(alt1/alt2/)'")


def parse_pq_line(line: str) -> dict:
    """Fields of one line (PathQuestion or WC2014 style); raises ConfigError on a malformed line.

    The answer is the path's last entity (every path of a conjunctive line must end there); the
    alternatives come from the parentheses after it (PathQuestion) or the fourth column (WC2014).
    """
    parts = line.rstrip("\r\n").split("\t")
    if len(parts) < 3:
        raise ConfigError(f"expected at least 3 tab-separated fields (question, answer, path): {line[:80]!r}")
    question, answer_field, path_field = parts[0].strip(), parts[1].strip(), parts[2].strip()
    paths = [parse_path(p) for p in path_field.split("*") if p.strip()]
    if not paths:
        raise ConfigError(f"no relation path in line {line[:80]!r}")
    ends = {entities[-1] for _, _, entities in paths}
    if len(ends) > 1:
        raise ConfigError(f"the paths of a conjunctive line end at different entities ({', '.join(sorted(ends))[:80]})")
    main, alts = split_answer_field(answer_field, ends.pop())
    if len(parts) > 3 and "#" not in parts[3]:
        alts = alts or _answer_set(parts[3])
    answers = [main]
    for alt in alts:
        if alt not in answers:
            answers.append(alt)
    return {"question": question, "answers": answers, "paths": paths, "extra": parts[3:]}


def guess_kb(qa_path: Path) -> Path:
    """The KB file that belongs to a question file (PQ-2H.txt -> 2H-kb.txt, WC-*.txt -> WC2014.txt)."""
    qa_path = Path(qa_path)
    stem = qa_path.stem.upper()
    folder = qa_path.parent
    candidates: list[str] = []
    m = re.match(r"^PQ-?(\d)H", stem)
    if m:
        candidates.append(f"{m.group(1)}H-kb.txt")
    m = re.match(r"^PQL-?(\d)H", stem)
    if m:
        candidates.append(f"PQL{m.group(1)}-KB.txt")
    if stem.startswith("WC"):
        candidates.append("WC2014.txt")
    for name in candidates:
        if (folder / name).is_file():
            return folder / name
    raise DatasetMissingError(
        f"no KB found beside {qa_path} (looked for {', '.join(candidates) or 'a known KB name'}); pass kb=PATH."
    )


def read_pq_file(path: Path, prefix: str | None = None, unparsed: list | None = None) -> list[KGQuestion]:
    """Every question of a PathQuestion-format file, in file order (blank lines skipped).

    A line that does not parse raises ConfigError, unless `unparsed` is a list: then the line is
    left out and `(line number, reason)` is appended to it, so the caller can count and report it.
    Question ids follow the line's position among the non-blank lines, so they do not shift.
    """
    path = Path(path)
    if not path.is_file():
        raise DatasetMissingError(f"question file {path} not found")
    prefix = prefix or path.stem.lower()
    out: list[KGQuestion] = []
    lines = [ln for ln in read_lines(path) if ln.strip()]  # newlines only; a bad byte names its line
    for i, line in enumerate(lines):
        try:
            rec = parse_pq_line(line)
        except ConfigError as exc:
            if unparsed is None:
                raise ConfigError(f"{path.name} line {i + 1}: {exc}") from None
            unparsed.append((i + 1, str(exc)))
            continue
        paths = rec["paths"]
        meta = {"line": i, "file": path.name,
                "paths": [{"topic": t, "relations": r, "entities": e} for t, r, e in paths]}
        branches = None
        if len(paths) == 1:
            topic, rels, _ = paths[0]
            chain = [(r, True) for r in rels]
            topics, hops, qtype = [topic], len(rels), "#".join(rels)
        else:  # conjunctive: several chains, one per path, meet at the answer
            chain = None
            branches = [(t, [(r, True) for r in rels]) for t, rels, _ in paths]
            topics = list(dict.fromkeys(t for t, _, _ in paths))
            hops = max(len(r) for _, r, _ in paths)
            qtype = "*".join("#".join(r) for _, r, _ in paths)
        out.append(KGQuestion(qid=f"{prefix}-{i:05d}", question=rec["question"], topic_entities=topics,
                              answers=rec["answers"], chain=chain, hops=hops, qtype=qtype, meta=meta,
                              branches=branches))
    return out


def split_indices(n: int, split: str, seed: int = PQ_SPLIT_SEED,
                  fractions: tuple[float, float, float] = PQ_SPLIT_FRACTIONS) -> np.ndarray:
    """Sorted question indices of one split of a seeded shuffle cut into train/dev/test."""
    if split not in SPLITS:
        raise ConfigError(f"split must be one of {', '.join(SPLITS)} (got {split!r}).")
    if split == "all":
        return np.arange(n)
    perm = np.random.default_rng(seed).permutation(n)
    n_train = int(round(fractions[0] * n))
    n_dev = int(round(fractions[1] * n))
    cuts = {"train": perm[:n_train], "dev": perm[n_train:n_train + n_dev], "test": perm[n_train + n_dev:]}
    return np.sort(cuts[split])
