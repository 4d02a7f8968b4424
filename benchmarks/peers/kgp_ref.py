"""The KGP reference's no-LLM retrievers (yuwvandy/KG-LLM-MDQA) beside our 04_kgp, on the same document sets.

    benchmarks/peers/setup.sh kgp-ref                              # once: its own environment (no torch)
    python benchmarks/peers/kgp_ref.py --reference-dir /work/peers/ref/KG-LLM-MDQA --dataset musique

What runs (kgp_ref_worker.py): its TF_IDF_retriever, BM25_retriever and KG_retriever ("KGP w/o LLM") with its
budget k = 30, over exactly our per-question document sets (KGPConfig defaults) and our passage graphs, so each
row compares one traversal with another on the same graph. What cannot run here and why is in the note this
writes beside the rows (and docs/PEERS.md). Scores: our recall@k and SF-EM@k of both sides' ranked passages.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
sys.path.insert(0, str(Path(__file__).resolve().parent))

import common  # noqa: E402

PEER = "kgp-ref"
REFERENCE = "yuwvandy/KG-LLM-MDQA"
KS = (10, 30)
LLM = "none (retrieval without an LLM on both sides)"
NOT_RUN = {"TAGME graph": "needs the WAT entity-linking web API (no network here)",
           "KGP-T5 / KGP-LLaMA / T5 / LLaMA": "its fine-tuned traversal agents (checkpoints not fetchable here)",
           "MDR / DPR": "its fine-tuned encoders", "KNN_retrieval": "needs spaCy en_core_web_lg (not on PyPI)",
           "its own TF-IDF / KNN graph construction": "needs spaCy en_core_web_lg and NLTK stopwords data"}


def parse_args(argv=None):
    ap = common.harness_args(__doc__, "musique", 100)
    ap.add_argument("--reference-dir", type=Path, required=True, help="a checkout of yuwvandy/KG-LLM-MDQA")
    ap.add_argument("--split", default="all")
    ap.add_argument("--graphs", default="tfidf,knn,entity")
    ap.add_argument("--k", type=int, default=30, help="the reference's budget (its run scripts use 30)")
    return ap.parse_args(argv)


def ours_and_sets(args, ds, sets_path: Path) -> dict:
    """Our traversals per question (tfidf baseline, no-LLM traversal on each graph) and the sets for the peer."""
    from kgrag_utils.methods.kgp import KGP, KGPConfig
    from kgrag_utils.methods.kgp.stages.evaluation import retrieval_metrics

    base = KGPConfig(dataset=args.dataset, limit=args.limit, seed=args.seed, budget=args.k)
    methods = {"tfidf": KGP.prepare(base.replace(traversal="tfidf", graph="none"), ds)}
    for g in [g for g in args.graphs.split(",") if g]:
        methods[f"kg_{g}"] = KGP.prepare(base.replace(traversal="nollm", graph=g), ds)
    ours: dict = {}
    with open(sets_path, "w", encoding="utf-8") as f:
        for q in ds.items:
            row, scores, gold = {}, {}, None
            for name, kgp in methods.items():
                prep = kgp.prepare_question(q)
                scores[name] = retrieval_metrics(kgp.retrieve(q, prep).ranked, prep.gold, list(KS))
                if name.startswith("kg_"):
                    row.setdefault("graphs", {})[name[3:]] = [prep.graph.neighbors(i).tolist()
                                                              for i in range(len(prep.dset))]
                if gold is None:
                    gold, dset = prep.gold, prep.dset
                    row.update({"id": q.qid, "question": q.question, "titles": list(dset.titles),
                                "chunks": dset.retrieval_texts(), "gold_units": list(gold.units),
                                "gold_cover": [c.tolist() for c in gold.cover]})  # for reading, not for the peer
            f.write(json.dumps(row) + "\n")
            ours[q.qid] = {"scores": scores, "gold": gold, "n_passages": len(row["chunks"])}
    return ours


def main(argv=None) -> int:
    args = parse_args(argv)
    from kgrag_utils import settings
    from kgrag_utils.datasets import load_dataset
    from kgrag_utils.methods.kgp.stages.evaluation import retrieval_metrics

    ref = args.reference_dir
    if not (ref / "Pipeline" / "retriever.py").exists():
        raise SystemExit(f"{ref} is not a KG-LLM-MDQA checkout (no Pipeline/retriever.py)")
    ds = load_dataset(args.dataset, split=args.split, limit=args.limit, seed=args.seed)
    run_dir = settings.results_dir() / "peers" / f"{PEER}-{args.dataset}-n{len(ds.items)}-k{args.k}"
    run_dir.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    ours = ours_and_sets(args, ds, run_dir / "sets.jsonl")
    t_ours = time.perf_counter() - t0
    out = run_dir / "peer.jsonl"
    out.unlink(missing_ok=True)  # the sets were just rewritten: the peer's lines follow them
    common.run_worker(common.peer_python(PEER, args.peer_python), "kgp_ref_worker.py",
                      ["--reference-dir", ref.resolve(), "--sets", run_dir / "sets.jsonl", "--out", out,
                       "--k", str(args.k)], log=run_dir / "peer.log")
    peer = common.by_id(common.read_jsonl(out))
    ids = [q.qid for q in ds.items]
    common.require_all(ids, peer, "the peer", f"see {run_dir / 'peer.log'}")
    version = common.reference_version(REFERENCE, ref)
    pairs = [("tfidf", "TF-IDF over the set (our traversal=tfidf)", "TF_IDF_retriever")]
    pairs += [(f"kg_{g}", f"no-LLM traversal on our {g} graph (traversal=nollm, graph={g})",
               f"KG_retriever ('KGP w/o LLM') on the same {g} graph") for g in args.graphs.split(",") if g]
    peer_scores = lambda key: {i: retrieval_metrics(peer[i][key], ours[i]["gold"], list(KS)) for i in ids}  # noqa: E731
    rows = []
    for key, ours_label, peer_label in pairs:
        theirs = peer_scores(key)
        rows += [common.score_row(
            PEER, version, f"{args.dataset} (KGP document sets, 700 passages per question)", LLM, metric,
            f"{ours_label}, budget {args.k}", f"{peer_label}, k={args.k}",
            [ours[i]["scores"][key][metric] for i in ids], [theirs[i][metric] for i in ids])
            for k in KS for metric in (f"recall@{k}", f"sf_em@{k}")]
    bm25 = peer_scores("bm25")
    note = {f"{PEER}/{args.dataset}": {
        "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "peer_records": str(out), "sets": str(run_dir / "sets.jsonl"),
        "questions": f"load_dataset({args.dataset!r}, {args.split!r}, limit={args.limit}, seed={args.seed})",
        "peer_only": {"BM25_retriever": {f"recall@{k}": round(sum(bm25[i][f"recall@{k}"] for i in ids) / len(ids), 4)
                                         for k in KS}},
        "ours_seconds_all_questions": round(t_ours, 1), "not_run": NOT_RUN}}
    common.write_rows(rows, args.out, note)
    return 0


if __name__ == "__main__":
    sys.exit(main())
