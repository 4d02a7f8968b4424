"""Markdown tables of benchmarks/results/peers.json, one per peer (docs/PEERS.md holds their output).

    python benchmarks/peers/table.py [--results benchmarks/results/peers.json]

Each line: dataset (subset), metric, ours and the peer's score with 95% intervals, n, and the paired
difference (ours - peer) with its interval, so a reader sees at once where a gap is larger than noise.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))


def _pct(x) -> str:
    return "" if x is None else f"{100 * x:.1f}"


def _ci(ci) -> str:
    return "" if not ci else f"[{_pct(ci[0])}, {_pct(ci[1])}]"


def tables(data: dict) -> str:
    out = []
    peers = sorted({r["peer"] for r in data.get("rows", [])})
    for peer in peers:
        rows = [r for r in data["rows"] if r["peer"] == peer]
        out.append(f"### {peer} ({rows[0]['peer_version']})\n")
        out.append("| dataset | metric | ours | peer | n | ours - peer [95%] | ours variant | peer variant |")
        out.append("|---|---|---|---|---|---|---|---|")
        for r in rows:
            d = r.get("difference") or {}
            subset = f" ({r['subset']})" if r.get("subset") and r["subset"] != "all" else ""
            out.append(f"| {r['dataset']}{subset} | {r['metric']} | {_pct(r['ours'])} {_ci(r.get('ours_ci95'))} | "
                       f"{_pct(r['peer_score'])} {_ci(r.get('peer_ci95'))} | {r['n']} | "
                       f"{_pct(d.get('mean'))} {_ci(d.get('ci95'))} | {r['ours_variant']} | {r['peer_variant']} |")
        out.append(f"\nLLM: {rows[0]['llm']}; embedder: {rows[0]['embedder']}.\n")
    return "\n".join(out)


def main(argv=None) -> int:
    import common

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--results", type=Path, default=common.REPO / common.RESULTS_FILE)
    args = ap.parse_args(argv)
    print(tables(json.loads(args.results.read_text(encoding="utf-8"))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
