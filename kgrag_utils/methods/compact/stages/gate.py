"""The gate: when does the derived answer replace the LLM's answer?

A gate is one of a few named rules over what the checks report (derivable, consistent, number of
derived answers, whether the chain came from evidence or from the backoff). It is chosen on a validation split - never on the test items - as the rule with
the most coverage whose derived-answer precision reaches `target_precision` (if none does, the
most precise rule). Precision = share of gated items whose derived answer is right; coverage =
share of items the gate lets through. The paper's figures for comparison: 81.5 / 62.1% precision
when the derivability check passes (WebQSP / CWQ), 89.8 / 95.9% with exactly one derived answer.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Mapping, Sequence

from ....errors import ConfigError

__all__ = ["GATES", "GateChoice", "gate_passes", "gate_table", "choose_gate"]


def _n(rec: Mapping) -> int:
    return int(rec.get("n_derived") or 0)


#: name -> predicate over a record with keys derivable, consistent, n_derived, chain_source
GATES: dict[str, Callable[[Mapping], bool]] = {
    "derivable": lambda r: bool(r.get("derivable")),
    "derivable+consistent": lambda r: bool(r.get("derivable")) and bool(r.get("consistent")),
    # the chain came from real evidence (a template, a skeleton, the vote or the rules), not the backoff
    # that tries every training chain: a derivable backoff chain is often a wrong chain that happens to
    # derive something when the right one cannot (an incomplete KG)
    "supported": lambda r: bool(r.get("derivable")) and bool(r.get("consistent"))
    and not str(r.get("chain_source") or "").endswith("fallback"),
    "consistent+max3": lambda r: bool(r.get("derivable")) and bool(r.get("consistent")) and _n(r) <= 3,
    "unique": lambda r: bool(r.get("derivable")) and _n(r) == 1,
    "consistent+unique": lambda r: bool(r.get("derivable")) and bool(r.get("consistent")) and _n(r) == 1,
    "never": lambda r: False,
}


def gate_passes(name: str, record: Mapping) -> bool:
    try:
        return GATES[name](record)
    except KeyError:
        raise ConfigError(f"unknown gate {name!r}: use one of {list(GATES)} or 'auto'.") from None


def gate_table(records: Sequence[Mapping], correct_key: str = "derived_correct") -> list[dict]:
    """Precision and coverage of every named gate over records (correct_key: 1/0 per record)."""
    n = len(records)
    rows = []
    for name in GATES:
        passed = [r for r in records if GATES[name](r)]
        right = sum(1 for r in passed if r.get(correct_key))
        rows.append({"gate": name, "n": n, "passed": len(passed), "coverage": len(passed) / n if n else 0.0,
                     "precision": right / len(passed) if passed else float("nan")})
    return rows


@dataclass(frozen=True)
class GateChoice:
    name: str
    precision: float
    coverage: float
    target_precision: float
    n_validation: int
    table: tuple = ()

    def to_record(self) -> dict:
        return {"gate": self.name, "validation_precision": self.precision, "validation_coverage": self.coverage,
                "target_precision": self.target_precision, "n_validation": self.n_validation,
                "table": list(self.table)}


def choose_gate(records: Sequence[Mapping], target_precision: float = 0.9,
                correct_key: str = "derived_correct") -> GateChoice:
    """The widest gate whose validation precision reaches the target (else the most precise one)."""
    if not 0.0 < target_precision <= 1.0:
        raise ConfigError(f"target_precision must be in (0, 1] (got {target_precision}).")
    table = gate_table(records, correct_key)
    usable = [row for row in table if row["passed"] > 0]
    ok = [row for row in usable if row["precision"] >= target_precision]
    if ok:
        best = max(ok, key=lambda r: (r["coverage"], r["precision"]))
    elif usable:
        best = max(usable, key=lambda r: (r["precision"], r["coverage"]))
    else:
        best = next(row for row in table if row["gate"] == "never")
    precision = best["precision"] if best["passed"] else float("nan")
    return GateChoice(best["gate"], precision, best["coverage"], target_precision, len(records), tuple(table))
