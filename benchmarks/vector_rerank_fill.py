"""What fills rerank-filled's list after the LLM's choices, compared on a finished run's records (no LLM call).

rerank-filled puts the passages of the relations the LLM chose first and fills up to final_k from the graph. This
script keeps each question's recorded choice and reasoning and ranks the fill in several ways:

* relation:           the candidate relations in order of their similarity to the question (fill_order="relation");
* question:           the candidates' passages by their own similarity to the question (fill_order="passage",
                      the default);
* question+reasoning: the same passages by their similarity to the question followed by the rerank's own
                      reasoning, which often names the chain's next entity (query expansion from the one call);
* the last two over all passages of the degree-1 and degree-2 expansion of the rerank's seeds instead of the
  40 capped candidates.

On a run with `samples` > 1 (a vote over several rerank replies), `--choice` picks what counts as the LLM's choice:
"recorded" (the run's vote, the default), "greedy" (reply 0 alone: the samples=1 run's reply, a check that the
sampled run reproduces it) or "union" (every candidate any reply named, by votes: exploration, not an option).

Only "relation" and "question" are options of the method; the others were tried here on the evaluated questions
themselves, so their numbers are exploration, not a tuned setting. Each order is reported on all questions and on
the first and second half of the seeded order, with the paired difference from naive (95% bootstrap interval).

The last row, "chosen on the other half", is the honest way to pick among the orders without a held-out split: each
half is scored with the order that had the best Recall@5 on the other half (two-fold cross-validated selection).

    python benchmarks/vector_rerank_fill.py --records results/RUN --dataset musique --limit 100 \
        --out benchmarks/results/vector_rerank_fill_musique.json
"""

from __future__ import annotations

import argparse
import copy
import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent / "peers"))
from common import bootstrap_mean, paired_difference  # noqa: E402  (the peers' interval helpers)

from kgrag_utils.metrics import recall_at_k  # noqa: E402
from kgrag_utils.records import write_result  # noqa: E402

ORDERS = ("relation", "question", "question+reasoning", "question, expansion degree 1",
          "question+reasoning, expansion degree 1", "question, expansion degree 2",
          "question+reasoning, expansion degree 2")
OPTIONS = {"relation": 'fill_order="relation" (the earlier rule)', "question": 'fill_order="passage" (the default)'}


def _records(path: Path) -> list[dict]:
    path = path / "examples.jsonl" if path.is_dir() else path
    if not path.exists():
        raise SystemExit(f"no run records at {path}: pass a run folder under results/ (vector_rerank_recall.py writes "
                         "one per run) or its examples.jsonl")
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


CHOICES = ("recorded", "greedy", "union")


def chosen_positions(rec: dict, choice: str = "recorded") -> list[int]:
    """The candidate positions counted as the LLM's choice: the recorded one, or from a sampled run's replies."""
    rr = rec.get("rerank") or {}
    if choice == "recorded":
        return list(rr.get("positions") or [])
    if not rr.get("samples"):
        raise SystemExit(f"--choice {choice} needs a run with samples > 1 (record {rec.get('id')} has no replies)")
    if choice == "greedy":
        return list(rr["samples"][0]["positions"])
    votes = {int(p): v for p, v in rr["votes"].items()}  # in the order the replies named them
    return sorted(votes, key=lambda p: -votes[p])


def fills(method, rec: dict, choice: str = "recorded") -> dict[str, list[int]]:
    """The passage list of every fill order for one recorded question (the LLM's passages first), each ranked by
    the method's own `ranked_passages` (fill_order "passage", or "relation" for the first)."""
    from kgrag_utils.methods.vector_rerank.stages.expansion import expand

    idx, k = method.index, method.config.final_k
    qv = idx.encode([rec["question"]])[0]
    reasoning = (rec.get("rerank") or {}).get("reasoning") or ""
    qr = idx.encode([f"{rec['question']} {reasoning}".strip()])[0]
    g = rec["graph"]["rerank"]
    cand = [c[0] for c in g["candidates"]]
    first = method.passages_of([cand[p] for p in chosen_positions(rec, choice)], qv, k)
    by_relation = copy.copy(method)
    by_relation.config = method.config.model_copy(update={"fill_order": "relation"})
    out = {"relation": by_relation.ranked_passages(cand, qv, k, first=first),
           "question": method.ranked_passages(cand, qv, k, first=first),
           "question+reasoning": method.ranked_passages(cand, qr, k, first=first)}
    for degree in (1, 2):
        exp = expand(idx.incidence, idx.incidence_t, [e[0] for e in g["seed_entities"]],
                     [r[0] for r in g["seed_relations"]], degree)
        out[f"question, expansion degree {degree}"] = method.ranked_passages(exp.relation_ids, qv, k, first=first)
        out[f"question+reasoning, expansion degree {degree}"] = method.ranked_passages(exp.relation_ids, qr, k,
                                                                                       first=first)
    return out


def cross_validated(scores: dict[str, list[float]], half: int, orders=ORDERS) -> tuple[list[float], list[str]]:
    """Per question, the Recall@5 of the order chosen on the other half (best mean there; ties: `orders` order),
    and the two choices (for the first half, for the second half)."""
    def best(lo: int, hi: int) -> str:
        return max(orders, key=lambda o: (float(np.mean(scores[o][lo:hi])), -orders.index(o)))

    n = len(next(iter(scores.values())))
    for_first, for_second = best(half, n), best(0, half)
    return scores[for_first][:half] + scores[for_second][half:], [for_first, for_second]


def _stats(values: list[float], naive: list[float]) -> dict:
    return {"recall@5": round(float(np.mean(values)), 4), "ci95": bootstrap_mean(values),
            "minus_naive": paired_difference(values, naive)}


def main(argv=None) -> int:
    from kgrag_utils.datasets import load_dataset
    from kgrag_utils.methods.vector_rerank import VectorRerankConfig
    from kgrag_utils.methods.vector_rerank.method import VectorRerank
    from kgrag_utils.methods.vector_rerank.summary import pick_shape
    from kgrag_utils.progress import progress_bar

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--records", type=Path, required=True, help="a run folder (results/RUN) or its examples.jsonl")
    ap.add_argument("--dataset", default="musique")
    ap.add_argument("--limit", type=int, default=100)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--choice", default="recorded", choices=CHOICES,
                    help="a sampled run (samples > 1): the vote (recorded), reply 0 alone (greedy), or every named fact")
    ap.add_argument("--out", default=None)
    args = ap.parse_args(argv)
    records = [r for r in _records(args.records) if (r.get("rerank") or {}).get("raw") is not None]
    ds = load_dataset(args.dataset, split="test", limit=args.limit, seed=args.seed)
    order = {q.qid: i for i, q in enumerate(ds.items)}
    missing = [r["id"] for r in records if r["id"] not in order]
    if missing:
        raise SystemExit(f"{len(missing)} recorded questions are not in {args.dataset} limit {args.limit} seed "
                         f"{args.seed} (e.g. {missing[0]}): pass the run's own --limit and --seed")
    records.sort(key=lambda r: order[r["id"]])
    cfg = VectorRerankConfig(dataset=args.dataset, limit=args.limit, seed=args.seed, entity_extraction="lexical",
                             variants=("naive", "expand"), fill_order="passage")
    method = VectorRerank.prepare(cfg, ds, progress=False)
    scores: dict[str, list[float]] = {o: [] for o in ("naive", *ORDERS)}
    with progress_bar(total=len(records), desc="fills", unit="q") as bar:
        for r in records:
            gold = r["gold"]
            scores["naive"].append(float(r["variants"]["naive"]["recall@5"]))
            for name, ps in fills(method, r, args.choice).items():
                scores[name].append(recall_at_k(method._keys(ps), gold, 5))
            bar.update(1)
    half = len(records) // 2
    rows = []
    for name in ORDERS:
        v, nv = scores[name], scores["naive"]
        rows.append({"order": name, "option": OPTIONS.get(name, "exploration (not an option)"),
                     "all": _stats(v, nv), "first_half": _stats(v[:half], nv[:half]),
                     "second_half": _stats(v[half:], nv[half:])})
    v, picked = cross_validated(scores, half)
    nv = scores["naive"]
    rows.append({"order": "chosen on the other half", "option": f"cross-validated choice: first half {picked[0]!r}, "
                 f"second half {picked[1]!r}", "chosen": {"first_half": picked[0], "second_half": picked[1]},
                 "all": _stats(v, nv), "first_half": _stats(v[:half], nv[:half]),
                 "second_half": _stats(v[half:], nv[half:])})
    run = json.loads((args.records / "run.json").read_text()) if args.records.is_dir() and (args.records / "run.json").exists() else {}
    result = {"benchmark": "vector_rerank_fill", "dataset": args.dataset, "limit": args.limit, "seed": args.seed,
              "n_questions": len(records), "records": str(args.records), "run_name": run.get("run_name"),
              "prompt_version": (run.get("params") or {}).get("prompt_version"), "choice": args.choice,
              "metric": "set-based passage Recall@5 of rerank-filled (the LLM's passages, then the fill)",
              "picks": pick_shape([{**r, "rerank": {**r["rerank"], "positions": chosen_positions(r, args.choice)}}
                                   for r in records]),
              "halves": f"first {half} / last {len(records) - half} questions of the seeded order",
              "naive": {"all": round(float(np.mean(scores["naive"])), 4),
                        "first_half": round(float(np.mean(scores["naive"][:half])), 4),
                        "second_half": round(float(np.mean(scores["naive"][half:])), 4)},
              "rows": rows}
    for row in rows:
        print(f"{row['order']:42s} R@5 {100 * row['all']['recall@5']:.1f}  halves "
              f"{100 * row['first_half']['recall@5']:.1f} / {100 * row['second_half']['recall@5']:.1f}  "
              f"- naive {100 * row['all']['minus_naive']['mean']:+.1f} {row['all']['minus_naive']['ci95']}")
    if args.out:
        print(f"wrote {write_result(args.out, result, args)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
