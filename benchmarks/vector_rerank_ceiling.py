"""How far a perfect reranker could take vector retrieval + rerank: the ceiling of its candidates (no LLM).

The method's rerank picks `select_n` relations out of the capped candidates; rerank-filled puts their passages
first and fills up with the other candidates' passages by query similarity. Whatever the LLM does, the passages
it can reach are those of the candidates. This benchmark replaces the LLM by an oracle that picks, in the
similarity order, one candidate for each gold passage the candidates reach, and reports:

* candidate coverage: gold passages among all the candidates' passages (no reranker can do better);
* oracle rerank-filled Recall@2/@5: the oracle's picks (at most `select_n`), then the rest by similarity;
* expand Recall@2/@5 (the similarity order, no pick) and naive Recall@2/@5 (dense passage search),

with the lexical query entities of the no-LLM variant (the method's LLM entities would need the LLM), at each
candidate cap in `--caps`. If the oracle's rerank-filled Recall@5 is not above naive, no reranker over these
candidates beats naive retrieval, and the fix is upstream of the LLM.

    python benchmarks/vector_rerank_ceiling.py --dataset musique --limit 100 \
        --out benchmarks/results/vector_rerank_ceiling_musique.json
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np

from kgrag_utils.metrics import recall_at_k
from kgrag_utils.records import write_result


def oracle_rows(method, question, cap: int) -> dict:
    """One question's coverage and recalls at one candidate cap (the oracle picks gold candidates)."""
    from kgrag_utils.methods.vector_rerank.stages.expansion import cap_by_similarity, expand
    from kgrag_utils.methods.vector_rerank.method import gold_of

    cfg, index = method.config, method.index
    gold = gold_of(question, method.gold_key)
    qvec = index.encode([question.question])[0]
    naive = [p for p, _ in index.search_passages(qvec[None, :], cfg.final_k)[0]]
    seeds = method.seeds(qvec, method.lexical(question.question))
    exp = expand(index.incidence, index.incidence_t, seeds["entity_ids"], seeds["relation_ids"], cfg.degree)
    cand, _ = cap_by_similarity(exp.relation_ids, index.relation_similarity(exp.relation_ids, qvec), cap)
    cand = [int(c) for c in cand]
    gold_set = set(gold)
    keys = {c: set(method._keys(index.relation_passages(c).tolist())) for c in cand}
    good = [c for c in cand if gold_set & keys[c]]
    picks, covered = [], set()  # one pick per gold passage not yet covered, in similarity order: a best pick
    for c in good:
        new = (gold_set & keys[c]) - covered
        if new and len(picks) < cfg.select_n:
            picks.append(c)
            covered |= new
    filled = method.ranked_passages(cand, qvec, cfg.final_k, first=method.passages_of(picks, qvec, cfg.final_k))
    reachable = set().union(*keys.values())
    expand_list = method.ranked_passages(cand, qvec, cfg.final_k)
    row = {"coverage": len(gold_set & reachable) / len(gold_set) if gold_set else 0.0,
           "n_candidates": len(cand), "n_gold_candidates": len(good)}
    for k in (2, 5):
        row[f"oracle_filled@{k}"] = recall_at_k(method._keys(filled), gold, k)
        row[f"expand@{k}"] = recall_at_k(method._keys(expand_list), gold, k)
        row[f"naive@{k}"] = recall_at_k(method._keys(naive), gold, k)
    return row


def summarize(rows: list[dict]) -> dict:
    keys = [k for k in rows[0] if k not in ("n_candidates", "n_gold_candidates")]
    out = {k: round(float(np.mean([r[k] for r in rows])), 4) for k in keys}
    out["candidates_mean"] = round(float(np.mean([r["n_candidates"] for r in rows])), 2)
    out["gold_candidates_mean"] = round(float(np.mean([r["n_gold_candidates"] for r in rows])), 2)
    out["questions_with_no_gold_candidate"] = sum(r["n_gold_candidates"] == 0 for r in rows)
    out["oracle_filled_minus_naive@5"] = round(out["oracle_filled@5"] - out["naive@5"], 4)
    return out


def main(argv=None) -> int:
    from kgrag_utils.datasets import load_dataset
    from kgrag_utils.methods.vector_rerank import VectorRerankConfig
    from kgrag_utils.methods.vector_rerank.method import VectorRerank
    from kgrag_utils.progress import progress_bar

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dataset", default="musique")
    ap.add_argument("--limit", type=int, default=100)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--caps", default="20,40,80", help="candidate caps (the method's default: 40)")
    ap.add_argument("--fill-order", default=VectorRerankConfig().fill_order, choices=("passage", "relation"),
                    help="how the passages after the picks (and the expand list) are ranked")
    ap.add_argument("--degree", type=int, default=VectorRerankConfig().degree,
                    help="expansion steps from the seeds before the cap (the method uses 1 or 2)")
    ap.add_argument("--out", default=None)
    args = ap.parse_args(argv)
    caps = [int(c) for c in args.caps.split(",")]
    ds = load_dataset(args.dataset, split="test", limit=args.limit, seed=args.seed)
    cfg = VectorRerankConfig(dataset=args.dataset, limit=args.limit, seed=args.seed, entity_extraction="lexical",
                             variants=("naive", "expand"), fill_order=args.fill_order, degree=args.degree)
    t0 = time.perf_counter()
    method = VectorRerank.prepare(cfg, ds)
    build_s = time.perf_counter() - t0
    by_cap = []
    for cap in caps:
        with progress_bar(total=len(ds.items), desc=f"cap {cap}", unit="q") as bar:
            rows = []
            for q in ds.items:
                rows.append(oracle_rows(method, q, cap))
                bar.update(1)
        by_cap.append({"cap": cap, **summarize(rows)})
    result = {"benchmark": "vector_rerank_ceiling", "dataset": ds.name, "n_questions": len(ds.items),
              "seed": args.seed, "select_n": cfg.select_n, "final_k": cfg.final_k, "method_cap": cfg.candidate_cap,
              "degree": cfg.degree,
              "fill_order": cfg.fill_order,
              "query_entities": "lexical (the no-LLM variant's); the method's LLM entities are not used",
              "metric": "set-based passage recall, as vector_rerank_recall.py; coverage: gold passages among all "
                        "the candidates' passages",
              "oracle": "picks, in similarity order, one candidate per gold passage not yet covered (at most select_n); "
                        "then the other candidates' passages by similarity (rerank-filled, fill_order)",
              "by_cap": by_cap, "index_build_s": round(build_s, 1)}
    for s in by_cap:
        print(f"cap {s['cap']:>3}: coverage {s['coverage']:.3f}  oracle-filled R@5 {s['oracle_filled@5']:.3f}  "
              f"expand R@5 {s['expand@5']:.3f}  naive R@5 {s['naive@5']:.3f}  "
              f"(no gold candidate: {s['questions_with_no_gold_candidate']})")
    if args.out:
        print(f"wrote {write_result(args.out, result, args)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
