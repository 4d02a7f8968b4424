"""Trace the naive row of the vector-graph-rag comparison: the same MiniLM over the same passage texts, two lists.

    python benchmarks/peers/vgr_naive_trace.py            # after benchmarks/peers/vgr.py (reads its peer outcomes)

Both sides embed `passage_text(title, text)` with all-MiniLM-L6-v2 and search exactly by inner product over
normalised vectors; sentence-transformers (ours) cuts a text at the model's configured 256 word pieces, the
peer's HuggingFace provider at `max_length=512`. This embeds the corpus at both cuts (no vector cache: it holds
the 256-piece vectors), takes each question's exact top 5 and reports, per cut, Recall@2/@5 and how many top-5
lists equal the peer's. No LLM. Writes benchmarks/results/peers_vgr_naive_trace.json.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import common  # noqa: E402

CUTS = (256, 512)
KS = (2, 5)


def top_k_ids(query_vecs, passage_vecs, pids: list[str], k: int) -> list[list[str]]:
    """Exact inner-product top k per query (ties broken by corpus order, as a stable sort does)."""
    import numpy as np

    order = np.argsort(-(query_vecs @ passage_vecs.T), axis=1, kind="stable")[:, :k]
    return [[pids[j] for j in row] for row in order]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dataset", default="musique")
    ap.add_argument("--limit", type=int, default=100)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--peer-from", type=Path, default=None,
                    help="the peer outcomes file (default: vgr.py's, benchmarks/results/peers_vgr_<dataset>_n<N>.json)")
    ap.add_argument("--out", type=Path, default=common.REPO / "benchmarks" / "results" / "peers_vgr_naive_trace.json")
    ap.add_argument("--batch-size", type=int, default=32)
    args = ap.parse_args(argv)
    import numpy as np
    from sentence_transformers import SentenceTransformer

    import vgr
    from kgrag_utils.datasets import load_dataset
    from kgrag_utils.embeddings import _resolve
    from kgrag_utils.methods.vector_rerank.stages.graph_index import passage_text
    from kgrag_utils.metrics import recall_at_k
    from kgrag_utils.records import write_result

    ds = load_dataset(args.dataset, split="test", limit=args.limit, seed=args.seed)
    peer_file = args.peer_from or vgr.outcomes_file(args.dataset, len(ds.items))
    outcomes = vgr.unhashed_questions(json.loads(Path(peer_file).read_text(encoding="utf-8")), ds)
    peer_naive = {i: r.get("naive") or [] for i, r in outcomes.items()}
    ids = [q.qid for q in ds.items]
    answered = [i for i in ids if i in peer_naive]
    gold = {q.qid: list(q.supporting) for q in ds.items}
    model_id, source = _resolve("minilm")
    model = SentenceTransformer(source, device="cpu")
    pids, texts = [p.pid for p in ds.corpus], [passage_text(p.title, p.text) for p in ds.corpus]
    n_pieces = np.array([len(x) for x in model.tokenizer(texts, add_special_tokens=True)["input_ids"]])
    configured = model.max_seq_length
    rows, lists = [], []
    for cut in CUTS:
        t0 = time.perf_counter()
        model.max_seq_length = cut
        pv = model.encode(texts, batch_size=args.batch_size, normalize_embeddings=True, show_progress_bar=True)
        qv = model.encode([q.question for q in ds.items], batch_size=args.batch_size, normalize_embeddings=True)
        lists.append(dict(zip(ids, top_k_ids(qv, pv, pids, max(KS)))))
        rows.append({"side": f"ours, passages cut at {cut} word pieces" + (" (the model's setting)" if cut == configured
                                                                            else ""),
                     "cut": cut, "seconds": round(time.perf_counter() - t0, 1)})
    rows.append({"side": "vector-graph-rag: retrieve_naive (its HuggingFace provider, max_length 512)", "cut": 512})
    lists.append(peer_naive)
    for row, got in zip(rows, lists):
        for subset, which in (("all", ids), ("peer_answered", answered)):
            for k in KS:
                row[f"{subset}_recall@{k}"] = (round(float(np.mean([recall_at_k(got[i], gold[i], k) for i in which])), 4)
                                               if all(i in got for i in which) else None)
        row["same_top5_as_peer"] = sum(got[i] == peer_naive[i] for i in answered)
        row["differs_from_peer"] = [
            {"id": i, "ours": [vgr._pid_key(p) for p in got[i]], "peer": [vgr._pid_key(p) for p in peer_naive[i]],
             "ours_recall@5": recall_at_k(got[i], gold[i], 5), "peer_recall@5": recall_at_k(peer_naive[i], gold[i], 5)}
            for i in answered if got[i] != peer_naive[i]]
        print(f"{row['side']}: R@5 {row['peer_answered_recall@5']:.3f} on the peer's {len(answered)} questions; "
              f"top 5 equal to the peer's on {row['same_top5_as_peer']}/{len(answered)}")
    result = {"benchmark": "peers_vgr_naive_trace", "dataset": args.dataset, "limit": args.limit, "seed": args.seed,
              "n_questions": len(ids), "n_peer_answered": len(answered), "embedder": model_id,
              "configured_max_seq_length": configured, "peer_file": str(Path(peer_file).name),
              "passages": {"n": len(texts), "over_256_pieces": int((n_pieces > 256).sum()),
                           "over_512_pieces": int((n_pieces > 512).sum())},
              "about": "ours cuts passages at sentence-transformers' configured 256 word pieces; the peer's "
                       "HuggingFace provider at 512. Exact top 5 by inner product at each cut, beside the peer's "
                       "naive lists (passage ids as sha1[:12])",
              "rows": rows}
    print(f"wrote {write_result(args.out, result, args)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
