"""Paraphrased and noisy versions of KG questions, made at run time (never stored in the repository).

Two generators test how relation knowledge learned from templated questions copes with other
wordings of the same questions:

* `noisy_question` - rule-based noise, deterministic per (question id, seed): synonym swaps from a
  general English table (`SYNONYMS`: movie -> picture, directed -> helmed, who -> which person, ...),
  one dropped function word (`DROPPABLE`: articles, auxiliaries, prepositions; a content word is
  kept, since a question without its only relation word asks nothing), and one misspelt word
  (a swap, deletion, doubling or neighbouring-key substitution inside a word of >= 4 letters).
  The topic mention (MetaQA's `[...]`) is never touched.
* `llm_paraphrases` - an LLM rewrites each question (few-shot prompt with invented examples; the
  bracketed mention must survive verbatim, else the paraphrase is rejected and counted).
  Responses go through the LLM's response cache, so a rerun is free.

Both return new `KGQuestion`s with the same id, topic, answers and gold chain, the original text in
`meta["original_question"]` and how it was made in `meta["paraphrase"]`. Questions derived from a
benchmark are derived data: keep them out of git (they live in memory and in the cache folder).

The relation knowledge must never read `SYNONYMS` or `DROPPABLE`: they describe the test noise.
"""

from __future__ import annotations

import dataclasses
import hashlib
import random
import re
from typing import Sequence

from ..errors import ConfigError

__all__ = ["SYNONYMS", "DROPPABLE", "NOISE_KINDS", "noisy_question", "noisy_questions", "misspell",
           "PARAPHRASE_SHOTS", "paraphrase_prompt", "clean_paraphrase", "llm_paraphrases"]

#: general English substitutions (each key may become any of its values)
SYNONYMS: dict[str, tuple[str, ...]] = {
    "movie": ("film", "picture", "flick"), "movies": ("films", "pictures", "flicks"),
    "film": ("movie", "picture"), "films": ("movies", "pictures"),
    "who": ("which person", "who exactly"), "what": ("which",), "which": ("what",),
    "directed": ("helmed", "made"), "direct": ("helm", "make"), "director": ("filmmaker", "helmer"),
    "directors": ("filmmakers",),
    "acted": ("performed", "played"), "act": ("perform", "play"), "actor": ("performer",),
    "actors": ("cast members", "performers"), "starred": ("featured", "appeared"), "star": ("feature", "appear"),
    "stars": ("features", "appears"), "appear": ("show up", "feature"), "appears": ("shows up", "features"),
    "written": ("penned", "authored"), "wrote": ("penned", "authored"), "write": ("pen", "author"),
    "writer": ("author", "scribe"), "writers": ("authors",), "screenwriter": ("scriptwriter", "scenarist"),
    "released": ("put out", "first shown", "premiered"), "release": ("premiere", "launch"),
    "year": ("year", "date"), "date": ("day", "time"), "when": ("what year", "at what time"),
    "genre": ("category", "kind"), "genres": ("categories", "kinds"), "type": ("category", "sort"),
    "language": ("tongue", "idiom"), "languages": ("tongues",), "spoken": ("used", "talked"),
    "describe": ("characterize", "sum up"), "described": ("characterized", "summed up"),
    "words": ("terms", "keywords"), "topics": ("subjects", "themes"), "about": ("concerning", "on"),
    "person": ("individual", "one"), "listed": ("named", "credited"), "same": ("identical", "shared"),
    "together": ("jointly", "alongside"), "share": ("have in common",),
}
#: function words a noisy rewrite may lose
DROPPABLE = frozenset(("the", "a", "an", "was", "is", "are", "were", "did", "does", "do", "of", "in", "for", "by",
                       "that", "which", "as", "on", "be", "can", "you", "it", "to", "with"))
NOISE_KINDS = ("synonym", "drop", "misspell")
_KEYBOARD = {c: n for row in ("qwertyuiop", "asdfghjkl", "zxcvbnm") for i, c in enumerate(row)
             for n in [row[max(i - 1, 0)] + row[min(i + 1, len(row) - 1)]]}
_SPLIT = re.compile(r"\[[^\]]*\]|\S+")


def _rng(qid: str, seed: int, salt: str = "") -> random.Random:
    digest = hashlib.sha256(f"{seed}:{salt}:{qid}".encode("utf-8")).digest()
    return random.Random(int.from_bytes(digest[:8], "big"))


def misspell(word: str, rng: random.Random) -> str:
    """One typing error inside a word: adjacent swap, deletion, doubling or a neighbouring key."""
    if len(word) < 4 or not word.isalpha():
        return word
    i = rng.randrange(1, len(word) - 1)  # keep the first letter (as most typos do)
    kind = rng.choice(("swap", "delete", "double", "neighbour"))
    if kind == "swap":
        return word[:i] + word[i + 1] + word[i] + word[i + 2:]
    if kind == "delete":
        return word[:i] + word[i + 1:]
    if kind == "double":
        return word[:i] + word[i] + word[i:]
    near = _KEYBOARD.get(word[i].lower())
    return word[:i] + (rng.choice(near) if near else word[i]) + word[i + 1:]


def noisy_question(text: str, qid: str, seed: int = 0, kinds: Sequence[str] = NOISE_KINDS,
                   swap_rate: float = 0.5) -> tuple[str, list[str]]:
    """(noisy text, list of the edits made). Deterministic for (text, qid, seed, kinds, swap_rate).

    synonym: each word of SYNONYMS is swapped with probability `swap_rate` (at least one when any
    can be); drop: one DROPPABLE word is removed; misspell: one word of >= 4 letters outside the
    topic mention gets a typing error. At least one edit is made when the question allows any.
    """
    unknown = sorted(set(kinds) - set(NOISE_KINDS))
    if unknown:
        raise ConfigError(f"unknown noise kind(s) {unknown}: use {NOISE_KINDS}.")
    rng = _rng(qid, seed)
    words = _SPLIT.findall(str(text))
    edits: list[str] = []
    if "synonym" in kinds:
        slots = [i for i, w in enumerate(words) if w.lower() in SYNONYMS]
        picked = [i for i in slots if rng.random() < swap_rate] or (slots[:1] if not slots else [rng.choice(slots)])
        for i in picked:
            new = rng.choice(SYNONYMS[words[i].lower()])
            edits.append(f"synonym {words[i]} -> {new}")
            words[i] = new
    if "drop" in kinds:
        slots = [i for i, w in enumerate(words) if w.lower() in DROPPABLE]
        if slots:
            i = rng.choice(slots)
            edits.append(f"drop {words[i]}")
            del words[i]
    if "misspell" in kinds:
        slots = [i for i, w in enumerate(words) if not w.startswith("[") and len(w) >= 4 and w.isalpha()]
        if slots:
            i = rng.choice(slots)
            new = misspell(words[i], rng)
            if new != words[i]:
                edits.append(f"misspell {words[i]} -> {new}")
                words[i] = new
    return " ".join(words), edits


def _with_text(question, text: str, how: dict):
    meta = {**question.meta, "original_question": question.question, "paraphrase": how}
    return dataclasses.replace(question, question=text, meta=meta)


def noisy_questions(questions: Sequence, seed: int = 0, kinds: Sequence[str] = NOISE_KINDS,
                    swap_rate: float = 0.5) -> list:
    """`noisy_question` applied to each KGQuestion (same ids, answers and chains)."""
    out = []
    for q in questions:
        text, edits = noisy_question(q.question, q.qid, seed, kinds, swap_rate)
        out.append(_with_text(q, text, {"kind": "rule", "seed": seed, "edits": edits}))
    return out


#: few-shot pairs for the LLM paraphraser: invented names, and relations written differently from any
#: benchmark's templates
PARAPHRASE_SHOTS = (
    ("who composed the score of [Harbor Lights]", "which person wrote the music for [Harbor Lights]"),
    ("what books did [Mira Solenne] publish", "[Mira Solenne] published which books"),
    ("the song [Blue Orchard] was recorded in what year", "in which year was [Blue Orchard] recorded"),
    ("which painters taught [Ottavio Brun]", "[Ottavio Brun] was a student of which painters"),
)
_SYSTEM = ("You rewrite questions in other words. Keep the meaning. Copy the name in square brackets exactly, "
           "with its brackets. Reply with the new question only.")


def paraphrase_prompt(question: str, shots: Sequence[tuple[str, str]] = PARAPHRASE_SHOTS) -> list[dict]:
    """Chat messages asking for one paraphrase of `question`."""
    messages = [{"role": "system", "content": _SYSTEM}]
    for src, dst in shots:
        messages += [{"role": "user", "content": src}, {"role": "assistant", "content": dst}]
    messages.append({"role": "user", "content": str(question)})
    return messages


def clean_paraphrase(reply: str, question: str) -> str | None:
    """The paraphrase in a reply, or None when it is unusable.

    Takes the first line, drops a "Question:" label, quotes and the final '?'. The question's
    bracketed mention must be there: verbatim, or in other letter case, or bare (then it is put
    back in brackets as written in the question). Unusable: empty, the question itself, a mention
    lost, or extra bracketed spans (they would read as topic mentions).
    """
    text = str(reply or "").strip()
    text = text.splitlines()[0].strip() if text else ""
    text = re.sub(r"^(new question|paraphrase|question)\s*:\s*", "", text, flags=re.I).strip()
    text = "".join(part if part.startswith("[") else part.replace('"', "")  # quotes outside mentions
                   for part in re.split(r"(\[[^\]]*\])", text))
    text = text.strip("'` ").rstrip("?").strip().strip("'` ").strip()
    mentions = re.findall(r"\[[^\]]*\]", str(question))
    for m in mentions:
        if m in text:
            continue
        name = m[1:-1]
        bracketed = re.search(r"\[" + re.escape(name) + r"\]", text, flags=re.I)
        bare = re.search(r"(?<![\w\[])" + re.escape(name) + r"(?![\w\]])", text, flags=re.I)
        hit = bracketed or bare
        if hit is None:
            return None
        text = text[:hit.start()] + m + text[hit.end():]
    if not text or len(re.findall(r"\[[^\]]*\]", text)) != len(mentions):
        return None
    if " ".join(text.lower().split()) == " ".join(str(question).lower().rstrip("?").split()):
        return None
    return text


def llm_paraphrases(questions: Sequence, llm, max_new_tokens: int = 40, batch_size: int = 8,
                    progress: bool = True) -> tuple[list, dict]:
    """LLM paraphrases of KGQuestions: (kept questions, counts). Rejected replies are counted, not kept."""
    from ..progress import progress_bar

    prompts = [paraphrase_prompt(q.question) for q in questions]
    model = getattr(getattr(llm, "preset", None), "name", None)
    kept, rejected = [], 0
    with progress_bar(total=len(questions), desc="paraphrase", unit="q", enabled=progress) as bar:
        for start in range(0, len(questions), batch_size):
            batch = questions[start:start + batch_size]
            results = llm.generate(prompts[start:start + batch_size], max_new_tokens=max_new_tokens, temperature=0.0)
            for q, res in zip(batch, results):
                text = clean_paraphrase(res.text, q.question)
                if text is None:
                    rejected += 1
                    continue
                kept.append(_with_text(q, text, {"kind": "llm", "model": model, "raw": res.text}))
            bar.update(len(batch))
    return kept, {"asked": len(questions), "kept": len(kept), "rejected": rejected}
