"""The tolerant parsers on adversarial model output: time at n and 8n characters, and whether they raise.

    python benchmarks/parsers_adversarial.py [--sizes 2000 16000] [--out benchmarks/results/parsers_adversarial.json]

For each input family (thousands of unclosed brackets, deep nesting, a 5,000-digit number, blank runs
next to a label, ...) and each public parser it records the CPU seconds (process time) of the fastest of `--repeats` calls at each size, the ratio
of the largest to the smallest (about the size ratio when the work is linear, its square when
quadratic), and any exception. Issue 17 case 11 measured `parse_triples('(' * 8000)` at 4.9 s, quadratic.
"""

from __future__ import annotations

import argparse
import platform
import time

from kgrag_utils import parsers
from kgrag_utils.records import write_result

FAMILIES = {
    "unclosed_parens": lambda n: "(" * n,
    "unclosed_brackets": lambda n: "[" * n,
    "unclosed_braces": lambda n: "{" * n,
    "nested_brackets": lambda n: "[" * (n // 2) + "]" * (n // 2),
    "nested_parens": lambda n: "(" * (n // 2) + ")" * (n // 2),
    "mixed_openers": lambda n: "({[\"'" * (n // 5),
    "long_number": lambda n: "9" * n,
    "bracketed_long_number": lambda n: "[" + "9" * n + "]",
    "comma_groups": lambda n: "(a," * (n // 3),
    "apostrophes_in_a_group": lambda n: "(" + "a'" * (n // 2) + ", b, c)",
    "blanks_after_a_label": lambda n: "answer" + " " * n + "x",
    "blanks_in_a_bare_line": lambda n: "(a, b, c)\na,b,c" + " " * n + "x(",
    "pipes": lambda n: "a|b|" * (n // 4),
    "quotes": lambda n: '"' * n,
}
PARSERS = {
    "parse_triples": parsers.parse_triples,
    "parse_ids": parsers.parse_ids,
    "extract_json": parsers.extract_json,
    "parse_answer_list": parsers.parse_answer_list,
}


def measure(sizes: list[int], repeats: int = 3) -> list[dict]:
    rows = []
    for family, make in FAMILIES.items():
        for name, fn in PARSERS.items():
            row = {"family": family, "parser": name, "seconds": {}, "error": None}
            for n in sizes:
                text = make(n)
                best = float("inf")
                for _ in range(repeats):  # the fastest of a few calls: the machine's load only adds
                    t0 = time.process_time()  # CPU seconds: robust to a loaded machine
                    try:
                        fn(text)
                    except Exception as exc:  # recorded: a parser must never raise
                        row["error"] = f"{type(exc).__name__}: {str(exc)[:80]}"
                    best = min(best, time.process_time() - t0)
                row["seconds"][str(n)] = round(best, 5)
            lo, hi = row["seconds"][str(sizes[0])], row["seconds"][str(sizes[-1])]
            row["ratio"] = round(hi / lo, 2) if lo > 1e-4 else None  # None: too fast to tell
            rows.append(row)
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[2000, 16000])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--out", default="benchmarks/results/parsers_adversarial.json")
    args = ap.parse_args()
    before = dict(parsers.STATS)
    rows = measure(sorted(args.sizes), args.repeats)
    worst = max(rows, key=lambda r: r["seconds"][str(max(args.sizes))])
    result = {
        "benchmark": "parsers_adversarial",
        "machine": {"python": platform.python_version(), "cpu_count": __import__("os").cpu_count()},
        "sizes": sorted(args.sizes),
        "size_ratio": max(args.sizes) / min(args.sizes),
        "repeats": args.repeats,
        "load_average": __import__("os").getloadavg(),
        "rows": rows,
        "errors": [r for r in rows if r["error"]],
        "slowest": {"family": worst["family"], "parser": worst["parser"], "seconds": worst["seconds"]},
        "over_budget_calls": parsers.STATS["over_budget"] - before["over_budget"],
    }
    out = write_result(args.out, result)
    print(f"{len(rows)} (family, parser) pairs, {len(result['errors'])} raised; slowest {worst['parser']} on "
          f"{worst['family']}: {worst['seconds']} s; {result['over_budget_calls']} calls over budget -> {out}")


if __name__ == "__main__":
    main()
