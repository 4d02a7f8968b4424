"""IRCoT's annotated training questions (Trivedi et al., ACL 2023): worked multi-hop examples, not evaluation data.

The IRCoT repository (github StonyBrookNLP/ircot, `prompt_generator/data_annotations/{dataset}.jsonnet`) holds
about 20 hand-annotated TRAINING questions per dataset: `{"question_id", "question_text", "reasoning_steps":
[{"paragraphs": [{"title", "text_substring"}], "cot_sent"}]}`, the last step's sentence being "So the answer is:
X." Its few-shot prompt files (`prompts/{dataset}/gold_with_3_distractors_context_cot_qa_codex.txt`) give each
question's gold paragraphs in full beside 3 distractor paragraphs:

    # METADATA: {"qid": "..."}
    Wikipedia Title: <title>
    <paragraph text>
    (blank line, next paragraph ...)
    Q: <question>
    A: <reasoning>. So the answer is: <answer>.

Each annotated question becomes a `PassageQuestion`: its paragraphs (gold and distractors, ids as MuSiQue's,
`passages.passage_id`), `supporting` = the gold paragraphs in the order of the reasoning steps, the answer, and
`meta["reasoning"]`: the step sentences before the answer ("CIMI-FM is licensed to broadcast in Quebec City."),
one per hop. They serve as demonstrations (`kgrag_utils.demos`, demo_pool="ircot"): none of them is among the
evaluated HippoRAG sample questions (the data README).

The annotation files are jsonnet (comments, trailing commas): read with the jsonnet library (`data` extra).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from ..errors import ConfigError, DatasetFormatError, DatasetMissingError, require
from .items import Passage, PassageQuestion
from .passages import passage_id
from .textfiles import read_text

__all__ = ["IRCOT_DATASETS", "POOL_FOR", "annotation_file", "prompt_file", "read_annotations", "read_prompt_blocks",
           "read_questions", "pool_dataset_name"]

#: registered name -> the IRCoT repository's name of the dataset (its annotation and prompt files)
IRCOT_DATASETS = {"ircot-musique": "musique", "ircot-hotpotqa": "hotpotqa", "ircot-2wiki": "2wikimultihopqa"}
#: evaluated dataset (registered name) -> the IRCoT training questions that demonstrate it (demo_pool="ircot")
POOL_FOR = {"musique": "ircot-musique", "hotpotqa": "ircot-hotpotqa", "2wiki": "ircot-2wiki"}
#: the prompt file whose paragraphs are read: gold paragraphs with 3 distractors (the most context IRCoT wrote)
PROMPT_FILE = "gold_with_3_distractors_context_cot_qa_codex.txt"

_ANSWER = re.compile(r"^\s*So the answer is:\s*(.*?)\s*\.?\s*$", re.I | re.S)
_METADATA = "# METADATA:"
_TITLE = "Wikipedia Title:"


def annotation_file(root: Path, ircot_name: str) -> Path:
    return Path(root) / "prompt_generator" / "data_annotations" / f"{ircot_name}.jsonnet"


def prompt_file(root: Path, ircot_name: str) -> Path:
    return Path(root) / "prompts" / ircot_name / PROMPT_FILE


def pool_dataset_name(dataset_name: str) -> str:
    """The registered IRCoT dataset that demonstrates `dataset_name` (a one-line ConfigError when there is none)."""
    if dataset_name not in POOL_FOR:
        raise ConfigError(f"demo_pool='ircot': IRCoT annotated training questions exist for "
                          f"{', '.join(POOL_FOR)}, not {dataset_name!r}; use demo_pool='train' or 'crossfit'.")
    return POOL_FOR[dataset_name]


def read_annotations(path: Path) -> list[dict]:
    """The annotated questions of one jsonnet file (a list of dicts)."""
    path = Path(path)
    if not path.is_file():
        raise DatasetMissingError(f"IRCoT annotation file {path} not found")
    jsonnet = require("_jsonnet", "data", "reading IRCoT's jsonnet annotations")
    try:
        data = json.loads(jsonnet.evaluate_snippet(str(path), read_text(path)))
    except RuntimeError as exc:  # the jsonnet library's parse error
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else "parse error"
        raise DatasetFormatError(f"{path} is not valid jsonnet ({first}); re-fetch it.") from None
    if not isinstance(data, list) or not all(isinstance(d, dict) and "question_text" in d for d in data):
        raise DatasetFormatError(f"{path}: expected a list of {{question_id, question_text, reasoning_steps}}.")
    return data


def read_prompt_blocks(path: Path) -> dict[str, dict]:
    """qid -> {"paragraphs": [(title, text)], "question", "answer_text"} of one IRCoT prompt file."""
    path = Path(path)
    if not path.is_file():
        raise DatasetMissingError(f"IRCoT prompt file {path} not found")
    blocks: dict[str, dict] = {}
    for n, chunk in enumerate(read_text(path).split(_METADATA)[1:], start=1):
        head, _, body = chunk.partition("\n")
        try:
            qid = str(json.loads(head)["qid"])
        except (json.JSONDecodeError, KeyError, TypeError):
            raise DatasetFormatError(f"{path}: demonstration {n} has no readable METADATA line ({head[:60]!r}).") from None
        paragraphs, question, answer, title, lines = [], "", "", None, []
        for line in body.split("\n") + [""]:
            if line.startswith(_TITLE) or line.startswith("Q:") or not line.strip():
                if title is not None and lines:
                    paragraphs.append((title, " ".join(lines).strip()))
                title, lines = None, []
            if line.startswith(_TITLE):
                title = line[len(_TITLE):].strip()
            elif line.startswith("Q:"):
                question = line[2:].strip()
            elif line.startswith("A:"):
                answer = line[2:].strip()
            elif title is not None and line.strip():
                lines.append(line.strip())
        blocks[qid] = {"paragraphs": paragraphs, "question": question, "answer_text": answer}
    return blocks


def _answer_of(steps: list[dict]) -> str:
    last = str(steps[-1].get("cot_sent", "")) if steps else ""
    m = _ANSWER.match(last)
    return m.group(1).strip() if m else ""


def _question(record: dict, block: dict, path: Path) -> PassageQuestion:
    qid = str(record.get("question_id", ""))
    steps = list(record.get("reasoning_steps") or [])
    paragraphs = [Passage(pid=passage_id(t, x), title=t, text=x) for t, x in block["paragraphs"]]
    by_title: dict[str, Passage] = {}
    for p in paragraphs:
        by_title.setdefault(p.title, p)
    gold: list[Passage] = []
    for step in steps:
        for ref in step.get("paragraphs") or []:
            title = ref.get("title")
            if title is None:
                continue
            if title not in by_title:
                raise DatasetFormatError(f"{path}: question {qid} names the paragraph {title!r}, which its prompt "
                                         f"demonstration does not show; re-fetch the IRCoT files.")
            if by_title[title] not in gold:
                gold.append(by_title[title])
    reasoning = [str(s.get("cot_sent", "")).strip() for s in steps if not _ANSWER.match(str(s.get("cot_sent", "")))]
    answer = _answer_of(steps)
    return PassageQuestion(qid=qid, question=str(record["question_text"]).strip(), answers=[answer] if answer else [],
                           paragraphs=paragraphs, supporting=[p.pid for p in gold],
                           supporting_titles=[p.title for p in gold], qtype=qid.split("__", 1)[0] if "__" in qid else None,
                           meta={"reasoning": [r for r in reasoning if r], "source": "IRCoT annotation"})


def read_questions(root: Path, ircot_name: str) -> tuple[list[PassageQuestion], list[Passage], dict]:
    """The annotated training questions of one IRCoT dataset, the passages they show, and counts for Dataset.info."""
    ann_path, prompt_path = annotation_file(root, ircot_name), prompt_file(root, ircot_name)
    records = read_annotations(ann_path)
    blocks = read_prompt_blocks(prompt_path)
    missing = [str(r.get("question_id")) for r in records if str(r.get("question_id")) not in blocks]
    if missing:
        raise DatasetFormatError(f"{prompt_path}: no demonstration for the annotated question(s) "
                                 f"{', '.join(missing[:3])}; re-fetch the IRCoT files.")
    questions = [_question(r, blocks[str(r["question_id"])], ann_path) for r in records]
    corpus: dict[str, Passage] = {}
    for q in questions:
        for p in q.paragraphs:
            corpus.setdefault(p.pid, p)
    info = {"annotation_file": ann_path.name, "prompt_file": f"{ircot_name}/{PROMPT_FILE}",
            "reasoning_steps": sum(len(q.meta["reasoning"]) for q in questions)}
    return questions, list(corpus.values()), info
