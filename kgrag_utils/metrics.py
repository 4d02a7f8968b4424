"""Answer and retrieval metrics, with one convention for missing outputs and missing gold.

Conventions (docs/METRICS.md defines every metric; docs/METHODS.md#shared-rules):
- A None / empty prediction counts as wrong (0.0); it is never dropped.
- Strict and lenient answer metrics are separate functions: ``hits_at_1`` (the first predicted
  answer, normalised, equals a gold answer) and ``containment`` (some gold answer, normalised, is
  a substring of the normalised output - what several reference codebases call "Hits@1").
- An example with no gold at all cannot be scored: every metric returns ``float('nan')`` for it,
  and ``summarize`` leaves such rows out of that key's mean and reports how many there were
  (``n_no_gold``), so a data problem is visible instead of silently counted as right or wrong.
- Retrieval metrics deduplicate the ranked ids first (keeping the first occurrence) and treat
  gold as a set.
"""

from __future__ import annotations

import math
import re
import string
from collections import Counter
from collections.abc import Hashable, Iterable, Mapping, Sequence

from .errors import ConfigError

__all__ = [
    "normalize_answer",
    "exact_match",
    "f1",
    "hits_at_1",
    "containment",
    "recall_at_k",
    "precision_at_k",
    "sf_em_at_k",
    "summarize",
    "wilson_interval",
    "HITS1", "CONTAINMENT", "EM", "F1", "ACCURACY", "FACT_HIT", "recall_name", "sf_em_name", "DEFINITIONS",
    "definition",
]

# ----------------------------------------------------------------------------- shared metric names
#: The names every method uses for its record and summary keys and its score rows (defined once, here;
#: docs/METRICS.md gives the full definitions). Strict and lenient are always separate metrics.
HITS1 = "hits@1"            # strict: the first predicted answer, normalised, equals a gold answer
CONTAINMENT = "containment"  # lenient: a gold answer, normalised, appears in the output
EM = "em"                   # SQuAD exact match of a short answer
F1 = "f1"                   # SQuAD token F1 of a short answer
ACCURACY = "accuracy"       # fact verification: the verdict equals the label
FACT_HIT = "fact_hit"       # a returned fact has a gold answer as its head or tail (retrieval only)


def recall_name(k: int) -> str:
    """The name of recall at cut-off k: share of the gold units among the first k retrieved."""
    return f"recall@{int(k)}"


def sf_em_name(k: int) -> str:
    """The name of supporting-fact exact match at k: 1 when every gold unit is among the first k."""
    return f"sf_em@{int(k)}"


#: one-line definitions, as the report's `definition` column prints them
DEFINITIONS = {
    HITS1: "strict: the first predicted answer equals a gold answer (normalised)",
    CONTAINMENT: "lenient: a gold answer appears in the output (what several papers call Hits@1)",
    EM: "exact match of the reader's answer (SQuAD normalisation)",
    F1: "token F1 of the reader's answer (SQuAD)",
    ACCURACY: "strict: the parsed verdict equals the label (fact verification)",
    FACT_HIT: "fact-level: a returned fact has a gold answer as head or tail (retrieval only, no answer)",
}


def definition(metric: str) -> str:
    """The one-line definition of a metric name (recall@k and sf_em@k for any k)."""
    if metric in DEFINITIONS:
        return DEFINITIONS[metric]
    name, _, k = metric.partition("@")
    if name == "recall" and k.isdigit():
        return f"passage recall@{k}: share of gold passages among the first {k} retrieved"
    if name == "sf_em" and k.isdigit():
        return f"supporting-fact EM@{k}: every gold passage is among the first {k} retrieved"
    return metric

_ARTICLES = re.compile(r"\b(a|an|the)\b")
_PUNCT_TABLE = str.maketrans("", "", string.punctuation)
_NAN = float("nan")


def normalize_answer(s: str | None) -> str:
    """SQuAD normalisation: lower case, drop punctuation and the articles a/an/the, squash spaces."""
    if s is None:
        return ""
    s = str(s).lower().translate(_PUNCT_TABLE)
    s = _ARTICLES.sub(" ", s)
    return " ".join(s.split())


def _golds(golds: str | Iterable[str] | None) -> list[str]:
    """Gold answers as a list (a single string is one gold answer)."""
    if golds is None:
        return []
    if isinstance(golds, str):
        return [golds]
    return [g for g in golds if g is not None]


def _against_golds(pred: str | None, golds: str | Iterable[str], score) -> float:
    """`score(normalised prediction, gold answers)`; nan without gold, 0 for no (or an empty) prediction."""
    gold_list = _golds(golds)
    if not gold_list:
        return _NAN
    p = normalize_answer(pred) if pred is not None else ""
    return score(p, gold_list) if p else 0.0


def exact_match(pred: str | None, golds: str | Iterable[str]) -> float:
    """1.0 when the normalised prediction equals some normalised gold answer; nan without gold."""
    return _against_golds(pred, golds, lambda p, gold_list: float(any(p == normalize_answer(g) for g in gold_list)))


def _f1_tokens(pred_tokens: list[str], gold_tokens: list[str]) -> float:
    if not pred_tokens or not gold_tokens:
        return float(pred_tokens == gold_tokens)
    common = Counter(pred_tokens) & Counter(gold_tokens)
    overlap = sum(common.values())
    if overlap == 0:
        return 0.0
    precision = overlap / len(pred_tokens)
    recall = overlap / len(gold_tokens)
    return 2 * precision * recall / (precision + recall)


def f1(pred: str | None, golds: str | Iterable[str]) -> float:
    """SQuAD token F1 against the best-matching gold answer; nan without gold, 0 for no prediction."""
    return _against_golds(pred, golds, lambda p, gold_list: max(_f1_tokens(p.split(), normalize_answer(g).split())
                                                                for g in gold_list))


def hits_at_1(pred_answers: Sequence[str] | str | None, golds: str | Iterable[str]) -> float:
    """STRICT Hits@1: the first predicted answer, normalised, equals a normalised gold answer."""
    gold_list = _golds(golds)
    if not gold_list:
        return _NAN
    if pred_answers is None:
        return 0.0
    if isinstance(pred_answers, str):
        first = pred_answers
    else:
        answers = list(pred_answers)
        if not answers:
            return 0.0
        first = answers[0]
    return exact_match(first, gold_list)


def containment(pred_text: str | None, golds: str | Iterable[str]) -> float:
    """LENIENT score: some gold answer, normalised, is a substring of the normalised output.

    Golds that normalise to the empty string (e.g. "The") are ignored, since "" is a substring of
    everything.
    """
    gold_list = _golds(golds)
    if not gold_list:
        return _NAN
    text = normalize_answer(pred_text)
    if not text:
        return 0.0
    return float(any(g and g in text for g in map(normalize_answer, gold_list)))


def _top_k(ranked_ids: Iterable[Hashable] | None, k: int) -> list[Hashable]:
    """The first k distinct ids, in rank order."""
    if isinstance(k, bool) or not isinstance(k, int) or k <= 0:
        raise ConfigError(f"k must be a positive integer, got {k!r}: pass k >= 1.")
    if ranked_ids is None:
        return []
    seen = dict.fromkeys(_as_list(ranked_ids))
    return list(seen)[:k]


def _as_list(ids: Iterable[Hashable]) -> list[Hashable]:
    # numpy arrays turn into python scalars so that 3 and np.int64(3) compare and hash alike
    tolist = getattr(ids, "tolist", None)
    return list(tolist()) if callable(tolist) else list(ids)


def _gold_set(gold_ids: Iterable[Hashable] | None) -> set[Hashable]:
    return set(_as_list(gold_ids)) if gold_ids is not None else set()


def recall_at_k(ranked_ids: Iterable[Hashable] | None, gold_ids: Iterable[Hashable], k: int) -> float:
    """Set recall: |gold among the first k distinct ranked ids| / |gold|; nan when gold is empty."""
    gold = _gold_set(gold_ids)
    top = _top_k(ranked_ids, k)
    if not gold:
        return _NAN
    return len(gold.intersection(top)) / len(gold)


def precision_at_k(ranked_ids: Iterable[Hashable] | None, gold_ids: Iterable[Hashable], k: int) -> float:
    """|gold among the first k distinct ranked ids| / k (the denominator is k even when fewer were
    retrieved, so a short list is not rewarded); nan when gold is empty."""
    gold = _gold_set(gold_ids)
    top = _top_k(ranked_ids, k)
    if not gold:
        return _NAN
    return len(gold.intersection(top)) / k


def sf_em_at_k(ranked_ids: Iterable[Hashable] | None, gold_ids: Iterable[Hashable], k: int) -> float:
    """Supporting-fact exact match: 1.0 iff every gold id is among the first k distinct ranked ids."""
    gold = _gold_set(gold_ids)
    top = _top_k(ranked_ids, k)
    if not gold:
        return _NAN
    return float(gold.issubset(top))


def _is_nan(value: object) -> bool:
    """True for float / numpy nan (the 'no gold' marker); False for None, numbers and anything else."""
    try:
        return value is not None and math.isnan(value)  # type: ignore[arg-type]
    except TypeError:
        return False


def wilson_interval(k: int, n: int, z: float = 1.96) -> dict:
    """The Wilson score interval of a rate k/n ({"rate", "low", "high"}; z = 1.96: 95%), None values when n = 0.

    Unlike the normal approximation it stays inside [0, 1] and is sensible near 0 and 1 and for small n."""
    if n <= 0:
        return {"rate": None, "low": None, "high": None}
    p = k / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return {"rate": p, "low": max(0.0, centre - half), "high": min(1.0, centre + half)}


def summarize(rows: Sequence[Mapping], keys: Sequence[str], failed_key: str = "failed") -> dict:
    """Mean of each metric over ALL rows, so denominators are the full sample.

    Per row and key: a nan value (no gold) is left out of that key's mean; otherwise a failed row
    (``row[failed_key]`` truthy), a missing key or a None value counts as 0. Returns
    ``{key: mean, ..., "n": rows, "n_failed": failed rows, "n_no_gold": rows with nan in any key}``;
    a key with nothing to average is nan.
    """
    if isinstance(keys, str):
        keys = [keys]
    rows = list(rows)
    out: dict = {}
    no_gold_rows: set[int] = set()
    for key in keys:
        total, count = 0.0, 0
        for i, row in enumerate(rows):
            value = row.get(key)
            if _is_nan(value):
                no_gold_rows.add(i)
                continue
            count += 1
            if row.get(failed_key) or value is None:
                continue
            total += float(value)
        out[key] = total / count if count else _NAN
    out["n"] = len(rows)
    out["n_failed"] = sum(1 for row in rows if row.get(failed_key))
    out["n_no_gold"] = len(no_gold_rows)
    return out
