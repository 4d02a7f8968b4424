"""Run vector-graph-rag (Milvus' package, from PyPI) on given passage questions: naive and graph retrieval.

Runs in the peer's environment, started by benchmarks/peers/vgr.py, which writes the corpus (passage id, text,
released triples), the questions and the package's Settings. The corpus goes in through
`add_documents_with_triplets`; the index is built once per corpus (a rerun reuses the Milvus Lite file while
its collections hold what the finished build recorded in index.json). Per question, one JSON line with the
passage ids of `retrieve_naive` (naive), `retrieve(use_reranking=True)` (padded: graph + LLM rerank topped up
with naive passages, the package's evaluation path), the same before the top-up (rerank), `retrieve(
use_reranking=False)` (expand) and its first top_k candidates' passages before the top-up (expand_unpadded),
plus the query entities, candidates, chosen relations and the reranker's raw reply. The package's response
cache makes `retrieve` and the unpadded replay share one rerank call.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
import time
import traceback
import warnings

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from worker_io import read_jsonl, run_pending  # noqa: E402


LLM_CALLS: list[dict] = []  # this question's LLM calls: finish reason and reply tokens (cleared per question)


def cap_replies(max_tokens: int) -> None:
    """Give every chat completion a reply budget where the package sets none (it passes no max_tokens, so a
    looping greedy reply runs to the context's end, minutes on a CPU), and note each call's finish reason."""
    from openai.resources.chat.completions import Completions

    create = Completions.create

    def capped(self, *a, **kw):
        if kw.get("max_tokens") is None:
            kw["max_tokens"] = max_tokens
        reply = create(self, *a, **kw)
        usage = getattr(reply, "usage", None)
        LLM_CALLS.append({"finish": reply.choices[0].finish_reason if reply.choices else None,
                          "completion_tokens": getattr(usage, "completion_tokens", None),
                          "prompt_tokens": getattr(usage, "prompt_tokens", None)})
        return reply

    Completions.create = capped


def _server_lost(exc: BaseException) -> bool:
    """The LLM server cannot be reached (it died, e.g. out of memory): the package retries, then fails with a
    connection error somewhere in the chain of causes."""
    seen = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        if type(exc).__name__ in ("APIConnectionError", "ConnectionRefusedError", "ConnectError"):
            return True
        inner = getattr(exc, "last_attempt", None)  # tenacity's RetryError holds the last attempt's exception
        exc = (inner.exception() if inner is not None and hasattr(inner, "exception") else None) \
            or exc.__cause__ or exc.__context__
    return False


def build(args):
    from vector_graph_rag import VectorGraphRAG
    from vector_graph_rag.config import Settings
    from vector_graph_rag.llm.cache import LLMCache, set_llm_cache

    set_llm_cache(LLMCache(os.path.join(args.work_dir, "llm_cache")))
    settings = Settings(**json.load(open(args.settings, encoding="utf-8")))
    rag = VectorGraphRAG(settings=settings)
    docs = [json.loads(line) for line in open(args.corpus, encoding="utf-8")]
    marker = os.path.join(args.work_dir, "index.json")  # what the last finished build left in the Milvus Lite file
    want = {"corpus_sha256": hashlib.sha256(open(args.corpus, "rb").read()).hexdigest(),
            "embedding_model": settings.embedding_model, "milvus_uri": settings.milvus_uri}
    built = json.load(open(marker, encoding="utf-8")) if os.path.exists(marker) else {}
    if built.get("inputs") == want and built.get("stats") == rag._store.get_collection_stats():
        print(f"reusing the index of {len(docs)} passages in {settings.milvus_uri}: {built['stats']}", flush=True)
    else:
        t0 = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)  # the method the issue names; an alias of rebuild_*
            rag.add_documents_with_triplets(docs, show_progress=False)
        stats = rag._store.get_collection_stats()
        json.dump({"inputs": want, "stats": stats, "seconds": round(time.perf_counter() - t0, 1)},
                  open(marker, "w", encoding="utf-8"))
        print(f"indexed {len(docs)} passages in {time.perf_counter() - t0:.1f} s: {stats}", flush=True)
    text_to_id = {}
    for d in docs:
        text_to_id.setdefault(d["passage"], d["id"])
    return rag, text_to_id


def one(rag, text_to_id: dict, question: str, k: int) -> dict:
    ids = lambda texts: [text_to_id.get(t) for t in texts]  # noqa: E731
    t0 = time.perf_counter()
    naive = rag.retrieve_naive(question, top_k=k).retrieved_passages
    t_naive = time.perf_counter() - t0
    padded = rag.retrieve(question, use_reranking=True, top_k=k)
    t_padded = time.perf_counter() - t0 - t_naive
    # the unpadded list: the same steps retrieve() takes, before its naive top-up (LLM replies come from the cache)
    found = rag._ensure_retriever().retrieve(question)
    cand_ids, cand_texts = found.expanded_relation_ids, found.expanded_relation_texts
    chosen_ids, chosen_texts = rag._reranker.rerank(question, cand_ids, cand_texts) if cand_ids else ([], [])
    rerank_pids, _ = rag._get_passages_from_relations(chosen_ids)
    raw = None
    if cand_ids and rag._reranker.cache is not None:
        key = rag._reranker._build_prompt(question, rag._reranker._format_relations(cand_ids, cand_texts))
        raw = rag._reranker.cache.get(rag._reranker.settings.cache_model_name(rag._reranker.model), key, temperature=0)
    expand = rag.retrieve(question, use_reranking=False, top_k=k).retrieved_passages
    # retrieve(use_reranking=False) before its naive top-up: the passages of its first k candidates
    expand_unpadded, _ = rag._get_passages_from_relations(list(cand_ids[:k]))
    return {
        "naive": ids(naive), "padded": ids(padded.retrieved_passages), "rerank": list(rerank_pids[:k]),
        "expand": ids(expand), "expand_unpadded": list(expand_unpadded[:k]), "query_entities": found.query_entities,
        "seed_entities": found.entity_texts, "seed_relations": found.relation_texts,
        "n_candidates": len(cand_ids), "eviction": [found.eviction_before_count, found.eviction_after_count],
        "candidates": cand_texts[:200], "chosen_relations": chosen_texts,
        "reranked_relations_public": padded.reranked_relations, "rerank_raw": raw,
        "seconds": {"naive": round(t_naive, 3), "graph_rerank": round(t_padded, 3),
                    "total": round(time.perf_counter() - t0, 3)},
    }


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--corpus", required=True, help="JSON lines: id, passage, triplets")
    ap.add_argument("--questions", required=True, help="JSON lines: id, question")
    ap.add_argument("--settings", required=True, help="vector_graph_rag.config.Settings keywords (JSON)")
    ap.add_argument("--out", required=True)
    ap.add_argument("--work-dir", required=True)
    ap.add_argument("--top-k", type=int, default=5)
    ap.add_argument("--max-new", type=int, default=0)
    ap.add_argument("--index-only", action="store_true", help="build (or check) the index and stop: no LLM call")
    ap.add_argument("--max-tokens", type=int, default=0, help="reply budget of a call that sets none (0: unbounded)")
    args = ap.parse_args(argv)
    if args.max_tokens:
        cap_replies(args.max_tokens)
    os.makedirs(args.work_dir, exist_ok=True)
    os.chdir(args.work_dir)
    questions = [json.loads(line) for line in open(args.questions, encoding="utf-8")]
    done = {r["id"] for r in read_jsonl(args.out)}
    if not args.index_only and all(q["id"] in done for q in questions):
        print("nothing to do: every question has a line", flush=True)
        return 0
    rag, text_to_id = build(args)
    if args.index_only:
        return 0

    def question(q: dict) -> dict:
        row = {"id": q["id"]}
        LLM_CALLS.clear()
        try:
            row.update(one(rag, text_to_id, q["question"], args.top_k))
            row["llm_calls"] = list(LLM_CALLS)
        except Exception as e:  # one bad question never stops the run; it is recorded as failed
            if _server_lost(e):  # not the question's failure: stop, so that a rerun computes it
                raise
            row.update({"failed": True, "error": f"{type(e).__name__}: {e}", "traceback": traceback.format_exc()[-2000:]})
        return row

    run_pending(questions, args.out, question, args.max_new)
    return 0


if __name__ == "__main__":
    sys.exit(main())
