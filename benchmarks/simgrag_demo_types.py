"""Which demonstrations the nearest choice picks, without an LLM: how many have the question's own type.

    python benchmarks/simgrag_demo_types.py --out benchmarks/results/simgrag_demo_types.json

SimGRAG's nearest demonstrations (docs/DEMONSTRATIONS.md) are the training questions whose entity-blanked text is
closest to the question's. On MetaQA's templated questions these are questions of the question's own type (its
template's relation chain, e.g. movie_to_director), so the model is shown the exact relation words it needs. This
script counts, for the seeded test sample of each hop (`load_dataset(name, "test", limit, seed)`, the LLM runs'
sample), how many of the 8 chosen demonstrations have the question's type, once for the templated questions and
once per rewriting of them (`--paraphrase`: the rule noise of kgrag_utils.datasets.paraphrase, seeded, as
`benchmarks/simgrag_e2e.py --paraphrase`). The pool and the choice are the pipeline's own
(`methods/simgrag/demos.py`: `pattern_demo_pool`, `DemoPool.nearest`). No LLM runs here: what the model makes of
the demonstrations is in the e2e runs' reports (`report.demonstrations.own_type`). Every wording is counted twice:
with the question compared as written (`wordings`, the choice before kgrag_utils.spelling) and with its misspelt
words respelt towards the pool's words first (`respelt`, `DemoPool(spelling=True)`, the default since 2026-12-04).
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time
from pathlib import Path

from kgrag_utils.datasets import load_dataset
from kgrag_utils.datasets.paraphrase import NOISE_KINDS, noisy_questions
from kgrag_utils.embeddings import load_embedder
from kgrag_utils.methods.simgrag import SimGRAGConfig
from kgrag_utils.methods.simgrag.stages.demos import own_type_counts, pattern_demo_pool
from kgrag_utils.records import write_result

DATASETS = ("metaqa-1hop", "metaqa-2hop", "metaqa-3hop")
WORDINGS = {"templated": (), "rules": NOISE_KINDS, **{kind: (kind,) for kind in NOISE_KINDS}}


def type_counts(pool, items, k: int) -> dict:
    """Own-type counts of the `k` nearest demonstrations of every item (items without a type are left out)."""
    counts = own_type_counts([(q.qtype, [d.item.qtype for d in pool.nearest(q, k)], False)
                              for q in items if q.qtype is not None])
    return {**{key: counts[key] for key in ("questions", "demonstrations", "of_own_type", "share",
                                            "questions_all_own_type")},
            "questions_none_own_type": counts["by_own_type"]["none"]["n"]}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--datasets", nargs="+", default=list(DATASETS))
    ap.add_argument("--limit", type=int, default=200)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--shots", type=int, default=SimGRAGConfig().shots, help="demonstrations chosen per question")
    ap.add_argument("--wordings", nargs="+", default=list(WORDINGS), choices=list(WORDINGS))
    ap.add_argument("--embedder", default="minilm")
    ap.add_argument("--out", type=Path, default=Path("benchmarks/results/simgrag_demo_types.json"))
    args = ap.parse_args(argv)

    embedder = load_embedder(args.embedder)
    t0 = time.perf_counter()
    hops = {}
    for name in args.datasets:
        data = load_dataset(name, split="test", limit=args.limit, seed=args.seed)
        pool = pattern_demo_pool(data, embedder, spelling=False)
        respelling = pattern_demo_pool(data, embedder, spelling=True)  # the same vectors, from the embedder's cache
        hops[name] = {"n_questions": len(data.items), "pool": {"split": pool.split, "size": len(pool)}, "wordings": {},
                      "respelt": {}}
        for label in args.wordings:
            kinds = WORDINGS[label]
            items = noisy_questions(data.items, seed=args.seed, kinds=kinds) if kinds else data.items
            hops[name]["wordings"][label] = counts = type_counts(pool, items, args.shots)
            hops[name]["respelt"][label] = respelt = type_counts(respelling, items, args.shots)
            respelt["questions_respelt"] = sum(respelling.query_text(q) != pool.query_text(q) for q in items)
            print(f"{name} {label:10s} own type {counts['share']:.3f} all {counts['questions_all_own_type']:3d} "
                  f"none {counts['questions_none_own_type']:3d} of {counts['questions']}; respelt {respelt['share']:.3f} "
                  f"all {respelt['questions_all_own_type']:3d} none {respelt['questions_none_own_type']:3d} "
                  f"({respelt['questions_respelt']} questions respelt)", flush=True)
    result = {
        "benchmark": "simgrag_demo_types",
        "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "what": "of the nearest demonstrations SimGRAG's pattern prompt would show each seeded test question, how "
                "many have the question's own MetaQA type; templated questions and rule-noise rewritings, each compared "
                "as written (wordings) and respelt towards the pool's words (respelt); no LLM",
        "sample": {"split": "test", "limit": args.limit, "seed": args.seed}, "shots": args.shots,
        "embedder": args.embedder,
        "wordings": {label: list(kinds) or "the dataset's own questions" for label, kinds in WORDINGS.items()
                     if label in args.wordings},
        "hops": hops,
        "seconds": round(time.perf_counter() - t0, 1),
        "machine": {"platform": platform.platform(), "cpus": os.cpu_count(),
                    "load_average_at_end": [round(x, 2) for x in os.getloadavg()]},
    }
    print(f"wrote {write_result(args.out, result, args)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
