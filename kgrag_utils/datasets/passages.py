"""Multi-hop QA over passages: HotpotQA, MuSiQue and 2WikiMultiHopQA in HippoRAG's file formats.

* HotpotQA (distractor format; 2Wiki's full dev file has the same shape): questions with
  `context` = [[title, [sentences]], ...] and `supporting_facts` = [[title, sentence index], ...];
  the corpus is a dict title -> sentences. Passage ids are titles (unique in these corpora).
* MuSiQue: questions with `paragraphs` = [{title, paragraph_text, is_supporting}], `answer`,
  `answer_aliases`, `question_decomposition`; the corpus is a list of {title, text} in which titles
  repeat, so a passage id is `title#<8 hex of sha1(text)>`: a function of title and text, hence
  stable and the same for a question's paragraph and its corpus copy (gold = title + text, the
  HippoRAG convention). The OpenIE file holds `docs[i]` with `extracted_triples` per passage.
* 2Wiki (HippoRAG corpus of {title, text}) with a question file of {question, supporting_titles}
  (no answers), or the full dev file in HotpotQA shape. Passage ids are titles.

Everything is parsed with json; triples stored as strings are read with ast.literal_eval.
"""

from __future__ import annotations

import ast
import hashlib
import json
from pathlib import Path

from ..errors import ConfigError, DatasetMissingError, IntegrityError
from .items import Passage, PassageQuestion
from .textfiles import read_text

__all__ = ["passage_id", "read_json", "read_corpus", "read_hotpot_questions", "read_musique_questions",
           "read_openie_triples", "read_title_questions"]


def passage_id(title: str, text: str) -> str:
    """Stable id of a passage whose title is not unique: title + '#' + 8 hex digits of sha1(text)."""
    return f"{title}#{hashlib.sha1(text.encode('utf-8')).hexdigest()[:8]}"


def read_json(path: Path):
    path = Path(path)
    if not path.is_file():
        raise DatasetMissingError(f"file {path} not found")
    try:
        return json.loads(read_text(path))  # a byte that is not UTF-8: one line naming its line
    except json.JSONDecodeError as exc:
        raise IntegrityError(f"{path} is not valid JSON ({exc.msg} at line {exc.lineno}); re-fetch it.") from None


def _join(sentences) -> str:
    return " ".join(str(s).strip() for s in sentences if str(s).strip())


def read_corpus(path: Path, id_by: str = "title") -> list[Passage]:
    """A corpus file as Passages: dict title -> sentences, or a list of {title, text}.

    id_by "title" uses the title as pid (raises if titles repeat); "title+text" uses passage_id().
    """
    data = read_json(path)
    passages: list[Passage] = []
    if isinstance(data, dict):
        for title, sentences in data.items():
            sentences = [str(s) for s in sentences] if isinstance(sentences, list) else [str(sentences)]
            passages.append(Passage(pid=str(title), title=str(title), text=_join(sentences), sentences=sentences))
    elif isinstance(data, list):
        for item in data:
            title, text = str(item.get("title", "")), str(item.get("text", item.get("paragraph_text", "")))
            pid = title if id_by == "title" else passage_id(title, text)
            passages.append(Passage(pid=pid, title=title, text=text))
    else:
        raise IntegrityError(f"{path}: a corpus is a dict title -> sentences or a list of {{title, text}}.")
    seen: dict[str, Passage] = {}
    for p in passages:
        if p.pid in seen and seen[p.pid].text != p.text:
            raise IntegrityError(f"{path}: two different passages share the id {p.pid!r}; load it with id_by='title+text'.")
        seen[p.pid] = p
    if len(seen) != len(passages):  # exact duplicates: keep the first
        passages = list(seen.values())
    return passages


def read_hotpot_questions(path: Path, prefix: str = "hotpotqa") -> list[PassageQuestion]:
    """HotpotQA-shaped questions (also 2Wiki's dev file); passage ids are titles."""
    data = read_json(path)
    if not isinstance(data, list):
        raise IntegrityError(f"{path}: expected a list of questions.")
    out = []
    for i, q in enumerate(data):
        paragraphs = []
        for entry in q.get("context", []):
            title, sentences = str(entry[0]), [str(s) for s in entry[1]]
            paragraphs.append(Passage(pid=title, title=title, text=_join(sentences), sentences=sentences))
        titles = list(dict.fromkeys(str(t) for t, _ in q.get("supporting_facts", [])))
        answer = q.get("answer")
        answers = [str(answer)] if answer not in (None, "") else []
        meta = {k: q[k] for k in ("level", "supporting_facts", "evidences", "answer_id") if k in q}
        out.append(PassageQuestion(qid=str(q.get("_id", q.get("id", f"{prefix}-{i:04d}"))), question=str(q["question"]),
                                   answers=answers, paragraphs=paragraphs, supporting=list(titles),
                                   supporting_titles=titles, qtype=q.get("type"), meta=meta))
    return out


def _in_hop_order(support: list, decomposition: list) -> list:
    """The supporting passages in the order of the question's hops (`paragraph_support_idx` of each step of its
    decomposition), so a demonstration's evidence chain starts at the first hop; the file lists them in paragraph
    order. Supporting passages no step names keep their paragraph order, after the others."""
    rank = {}
    for step, hop in enumerate(decomposition):
        idx = hop.get("paragraph_support_idx") if isinstance(hop, dict) else None
        if idx is not None:
            rank.setdefault(idx, step)
    order = sorted(range(len(support)), key=lambda i: (rank.get(support[i][0], len(decomposition)), i))
    return [support[i][1] for i in order]


def read_musique_questions(path: Path) -> list[PassageQuestion]:
    """MuSiQue questions; paragraph pids are passage_id(title, text) (so they match the corpus)."""
    data = read_json(path)
    if not isinstance(data, list):
        raise IntegrityError(f"{path}: expected a list of questions.")
    out = []
    for i, q in enumerate(data):
        paragraphs, support = [], []
        for k, p in enumerate(q.get("paragraphs", [])):
            title, text = str(p["title"]), str(p.get("paragraph_text", p.get("text", "")))
            passage = Passage(pid=passage_id(title, text), title=title, text=text)
            paragraphs.append(passage)
            if p.get("is_supporting"):
                support.append((p.get("idx", k), passage))
        support = _in_hop_order(support, q.get("question_decomposition") or [])
        supporting, titles = [p.pid for p in support], [p.title for p in support]
        answers = [str(q["answer"])] if q.get("answer") not in (None, "") else []
        answers += [str(a) for a in q.get("answer_aliases", []) if str(a) not in answers]
        qid = str(q.get("id", f"musique-{i:04d}"))
        qtype = qid.split("__", 1)[0] if "__" in qid else None
        meta = {"question_decomposition": q.get("question_decomposition", []),
                "answerable": q.get("answerable")}
        out.append(PassageQuestion(qid=qid, question=str(q["question"]), answers=answers, paragraphs=paragraphs,
                                   supporting=supporting, supporting_titles=titles, qtype=qtype, meta=meta))
    return out


def _as_list(value, what: str):
    if isinstance(value, str):
        try:
            return ast.literal_eval(value)
        except (ValueError, SyntaxError):
            raise ConfigError(f"cannot parse OpenIE {what} {value[:60]!r}") from None
    return value or []


def read_openie_triples(path: Path) -> tuple[dict[str, list[tuple[str, str, str]]], dict]:
    """OpenIE triples keyed by passage_id(title, text), plus counts (raw, kept, malformed).

    Triples with other than three string parts (the extraction produced 2- to 6-part ones) are
    counted as malformed and left out.
    """
    data = read_json(path)
    docs = data.get("docs", []) if isinstance(data, dict) else data
    triples: dict[str, list[tuple[str, str, str]]] = {}
    raw = kept = 0
    for doc in docs:
        title, text = doc.get("title"), doc.get("text")
        if title is None or text is None:
            title, _, text = str(doc.get("passage", "")).partition("\n")
        pid = passage_id(str(title), str(text))
        rows = _as_list(doc.get("extracted_triples", []), "triples")
        good = []
        for t in rows:
            raw += 1
            if isinstance(t, (list, tuple)) and len(t) == 3 and all(isinstance(x, str) for x in t):
                good.append((t[0], t[1], t[2]))
        kept += len(good)
        triples.setdefault(pid, []).extend(good)
    return triples, {"openie_docs": len(docs), "openie_triples_raw": raw, "openie_triples": kept,
                     "openie_malformed": raw - kept}


def read_title_questions(path: Path, prefix: str) -> list[PassageQuestion]:
    """Questions given as {question, supporting_titles} (no answers, no own paragraphs)."""
    data = read_json(path)
    if not isinstance(data, list):
        raise IntegrityError(f"{path}: expected a list of questions.")
    out = []
    for i, q in enumerate(data):
        titles = list(dict.fromkeys(str(t) for t in q.get("supporting_titles", [])))
        answers = q.get("answers") or ([q["answer"]] if q.get("answer") else [])
        out.append(PassageQuestion(qid=str(q.get("id", f"{prefix}-{i:03d}")), question=str(q["question"]),
                                   answers=[str(a) for a in answers], paragraphs=[], supporting=list(titles),
                                   supporting_titles=titles, qtype=q.get("type"), meta={}))
    return out
