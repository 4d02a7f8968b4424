"""IIRC (Ferguson et al., EMNLP 2020): questions on a Wikipedia paragraph whose answers need the
documents it links to, in the released json format.

Files (iirc_train_dev.tgz -> `train.json`, `dev.json`; `iirc_test.json`; context_articles.tar.gz ->
`context_articles.json`, all from iirc-dataset.s3.us-west-2.amazonaws.com):
* a split file is a list of main passages {pid?, title, text, links: [{indices: [start, end],
  target: title}], questions: [{qid?, question, answer, question_links: [title], context:
  [{passage: 'main' | title, text, indices}]}]};
* answer = {type: 'span' | 'value' | 'binary' | 'none' | 'bad', answer_spans: [{text, ...}],
  answer_value, answer_unit?};
* `context_articles.json`: dict title (lower-cased in the release; some are not) -> the whole
  article as HTML (links kept as <a href> tags).

Each question becomes a `PassageQuestion` whose `paragraphs` are its document set: the main passage
plus the paragraphs of every document the main passage links to (tags removed, split on newlines,
empty lines dropped), which is the setting KGP evaluates in. `supporting` holds the paragraphs
that contain the annotated context snippets (exact containment after whitespace normalisation,
else the paragraph of the same document with the highest word overlap; counted in info).
Answers: span -> the spans joined by ", " (each span in meta), value -> answer_value, binary ->
"yes"/"no"; 'none' (unanswerable) questions are left out unless `unanswerable=True`, 'bad' ones
always (IRCoT's processing does the same).
"""

from __future__ import annotations

import html
import re
from pathlib import Path

from ..errors import ConfigError, DatasetMissingError, IntegrityError
from .passages import passage_id, read_json
from .items import Passage, PassageQuestion

__all__ = ["SPLIT_FILES", "ARTICLES_FILE", "strip_html", "article_paragraphs", "read_articles",
           "read_questions", "answers_of"]

SPLIT_FILES = {"train": ("train.json",), "dev": ("dev.json",), "test": ("iirc_test.json", "test.json")}
ARTICLES_FILE = "context_articles.json"
_TAG = re.compile(r"<[^>]*>")
_SPACE = re.compile(r"\s+")
_WORD = re.compile(r"\w+")


def strip_html(text: str) -> str:
    """Article HTML as plain text: tags removed, entities unescaped, newlines kept."""
    return html.unescape(_TAG.sub("", text))


def article_paragraphs(text: str) -> list[str]:
    """Non-empty lines of a tag-free article, whitespace-normalised."""
    return [p for p in (_SPACE.sub(" ", line).strip() for line in text.split("\n")) if p]


def read_articles(path: Path) -> dict[str, str]:
    data = read_json(path)
    if not isinstance(data, dict):
        raise IntegrityError(f"{path}: expected a dict title -> article HTML; re-fetch it.")
    return data


def answers_of(answer: dict) -> tuple[list[str], str]:
    """(answers, answer type) of an IIRC answer record; [] for 'none' and 'bad'."""
    a_type = str(answer.get("type", ""))
    if a_type == "span":
        spans = [str(s.get("text", "")).strip() for s in answer.get("answer_spans", [])]
        spans = [s for s in spans if s]
        return ([", ".join(spans)] if spans else []), a_type
    if a_type in ("value", "binary"):
        value = str(answer.get("answer_value", "")).strip()
        return ([value] if value else []), a_type
    if a_type in ("none", "bad"):
        return [], a_type
    raise IntegrityError(f"unknown IIRC answer type {a_type!r}; expected span, value, binary, none or bad.")


def _norm(text: str) -> str:
    return _SPACE.sub(" ", strip_html(text)).strip().lower()


def _match(snippet: str, passages: list[Passage]) -> tuple[Passage | None, bool]:
    """The passage holding a context snippet: exact containment, else best word overlap."""
    if not passages:
        return None, False
    s = _norm(snippet)
    if s:
        for p in passages:
            if s in p.text.lower():
                return p, True
    words = set(_WORD.findall(s))
    if not words:
        return None, False
    scores = [len(words & set(_WORD.findall(p.text.lower()))) for p in passages]
    best = max(range(len(passages)), key=lambda i: (scores[i], -i))
    return (passages[best], False) if scores[best] > 0 else (None, False)


class _DocumentPassages:
    """Paragraph passages of linked documents, built once per title."""

    def __init__(self, articles: dict[str, str]):
        self._articles = articles
        self._cache: dict[str, list[Passage]] = {}
        self.missing: set[str] = set()

    def get(self, title: str) -> list[Passage]:
        if title in self._cache:
            return self._cache[title]
        raw = self._articles.get(title)
        if raw is None:
            raw = self._articles.get(title.strip().lower())
        if raw is None:
            self.missing.add(title)
            passages: list[Passage] = []
        else:
            passages = [Passage(pid=passage_id(title, p), title=title, text=p)
                        for p in article_paragraphs(strip_html(str(raw)))]
        self._cache[title] = passages
        return passages


def find_split_file(root: Path, split: str) -> Path:
    if split not in SPLIT_FILES:
        raise ConfigError(f"IIRC splits are {', '.join(SPLIT_FILES)} (got {split!r}).")
    for name in SPLIT_FILES[split]:
        for cand in (Path(root) / name, Path(root) / "iirc_train_dev" / name):
            if cand.is_file():
                return cand
    raise DatasetMissingError(f"no {' or '.join(SPLIT_FILES[split])} in {root}")


def read_questions(root: Path, split: str, unanswerable: bool = False, prefix: str = "iirc"
                   ) -> tuple[list[PassageQuestion], list[Passage], dict]:
    """Questions of a split with their document sets, the split's corpus and counts for info."""
    path = find_split_file(root, split)
    articles_path = Path(root) / ARTICLES_FILE
    data = read_json(path)
    if not isinstance(data, list):
        raise IntegrityError(f"{path}: expected a list of main passages; re-fetch it.")
    docs = _DocumentPassages(read_articles(articles_path))
    corpus: dict[str, Passage] = {}
    out: list[PassageQuestion] = []
    counts = {"none": 0, "bad": 0, "support_exact": 0, "support_overlap": 0, "support_unmatched": 0}
    n_q = 0
    for pi, main in enumerate(data):
        title, text = str(main.get("title", "")).strip(), _SPACE.sub(" ", str(main.get("text", ""))).strip()
        main_passage = Passage(pid=passage_id(title, text), title=title, text=text)
        targets = list(dict.fromkeys(str(link.get("target", "")).strip() for link in main.get("links", [])))
        targets = [t for t in targets if t]
        paragraphs = [main_passage]
        by_title: dict[str, list[Passage]] = {}
        for t in targets:
            ps = docs.get(t)
            by_title[t] = ps
            paragraphs.extend(ps)
        for p in paragraphs:
            corpus.setdefault(p.pid, p)
        for qi, q in enumerate(main.get("questions", [])):
            n_q += 1
            answers, a_type = answers_of(q.get("answer", {}))
            if a_type == "bad" or (a_type == "none" and not unanswerable):
                counts[a_type] += 1
                continue
            supporting: list[str] = []
            titles: list[str] = []
            for ctx in q.get("context", []):
                src = str(ctx.get("passage", "")).strip()
                if src == "main":
                    hit, exact = main_passage, True
                else:
                    pool = by_title.get(src)
                    if pool is None:  # a context document the main passage does not link to
                        pool = docs.get(src)
                        for p in pool:
                            corpus.setdefault(p.pid, p)
                    hit, exact = _match(str(ctx.get("text", "")), pool)
                if hit is None:
                    counts["support_unmatched"] += 1
                    continue
                counts["support_exact" if exact else "support_overlap"] += 1
                if hit.pid not in supporting:
                    supporting.append(hit.pid)
                if hit.title not in titles:
                    titles.append(hit.title)
            own = paragraphs
            extra = [corpus[s] for s in supporting if s not in {p.pid for p in paragraphs}]
            if extra:
                own = paragraphs + extra
            if q.get("qid"):
                qid = str(q["qid"])
            elif main.get("pid"):
                qid = f"{main['pid']}-{qi}"
            else:
                qid = f"{prefix}-{split}-{pi:05d}-{qi}"
            spans = [str(s.get("text", "")).strip() for s in q.get("answer", {}).get("answer_spans", [])]
            out.append(PassageQuestion(
                qid=qid, question=str(q.get("question", "")), answers=answers, paragraphs=own,
                supporting=supporting, supporting_titles=titles, qtype=a_type,
                meta={"answer_type": a_type, "answer_spans": spans,
                      "answer_unit": q.get("answer", {}).get("answer_unit"),
                      "question_links": [str(x) for x in q.get("question_links", [])],
                      "context": q.get("context", []), "main_title": title, "linked_documents": len(targets)},
            ))
    info = {"file": path.name, "main_passages": len(data), "questions_in_file": n_q,
            "left_out_unanswerable": counts["none"], "left_out_bad": counts["bad"],
            "support_exact": counts["support_exact"], "support_overlap": counts["support_overlap"],
            "support_unmatched": counts["support_unmatched"], "missing_articles": len(docs.missing)}
    return out, list(corpus.values()), info
