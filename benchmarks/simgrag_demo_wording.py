"""SimGRAG's demonstration wording, measured without an LLM: the retrieval of a perfectly copied demonstration.

    python benchmarks/simgrag_demo_wording.py --out benchmarks/results/simgrag_demo_wording.json

With nearest demonstrations (docs/DEMONSTRATIONS.md) a MetaQA question is shown training questions of its own
template, each written as a pattern by `pattern_demo()` (kgrag_utils/methods/simgrag/demos.py) in the words of
the prompt file's `demonstrations:` table (kgrag_utils/prompts/simgrag_pattern.yaml). A model that copies such a
demonstration perfectly writes the question's own gold chain in those words. This script writes exactly that
pattern for every question of the seeded test sample (`load_dataset(name, "test", limit, seed)`, the sample the
LLM runs use), runs the GSD retrieval on it with the 1.5B runs' search settings (SimGRAGConfig's defaults: k = 3,
16 entity / relation candidates, walks allowed, either direction; the anchor option only constrains the LLM's
decoding, so a copied pattern is the same with it), and records per question whether the top-1 subgraph's answer
node and the top-k evidence hold a gold answer, and which KG relation the top subgraph used for every edge.

It does so once per wording: "current" (the prompt file's), every built-in candidate (`CANDIDATES`: other words
for `starred_actors`, and for `directed_by` / `written_by`), and any given with `--candidate
'label={"starred_actors": {"words": "starred in", "subject": "tail"}}'` (JSON; the keys of an entry replace the
file's, `subject`: tail = the triple runs against the KG's direction, as "<actor> acted in <movie>"). The
"oracle" row is the gold pattern in the KG's own relation names (the retrieval's ceiling, as
benchmarks/simgrag_retrieval.py). `pattern_stage_misses` counts what the LLM runs blame on the pattern stage for
a copied pattern: its evidence holds no gold answer while the oracle pattern's does. The MiniLM cosine of every
wording's words against every KG relation name is recorded too. No LLM runs here: whether a model copies a
wording is a question for an LLM run.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from collections import Counter
from pathlib import Path

import numpy as np

from kgrag_utils.datasets import load_dataset
from kgrag_utils.embeddings import load_embedder
from kgrag_utils.metrics import normalize_answer
from kgrag_utils.records import write_result
from kgrag_utils.methods.simgrag import SimGRAGConfig
from kgrag_utils.methods.simgrag.stages.demos import demo_wording, pattern_demo
from kgrag_utils.methods.simgrag.stages.gsd_search import GSDRetriever, embedding_text
from kgrag_utils.methods.simgrag.stages.oracle import oracle_pattern
from kgrag_utils.methods.simgrag.stages.pattern import Pattern, validate_pattern

DATASETS = ("metaqa-1hop", "metaqa-2hop", "metaqa-3hop")

#: candidate wordings: {label: {KG relation: the entry keys that replace the prompt file's}}
_ACTOR_WORDS = (("starred in", "tail"), ("starred", "tail"), ("starred actor in", "tail"), ("is an actor of", "tail"),
                ("actor of", "tail"), ("appeared in", "tail"), ("stars", "head"), ("starring", "head"),
                ("starred actors", "head"), ("has actor", "head"))
CANDIDATES: dict[str, dict] = {
    "acted in": {"starred_actors": {"words": "acted in", "subject": "tail", "backward": "movies {x} acted in"}},
    **{(w if s == "tail" else f"{w} (movie -> actor)"): {"starred_actors": {"words": w, "subject": s}}
       for w, s in _ACTOR_WORDS},
    "directed by (movie -> director)": {"directed_by": {"words": "directed by", "subject": "head"}},
    "written by (movie -> writer)": {"written_by": {"words": "written by", "subject": "head"}},
}


def top_relations(kg, result, n_edges: int) -> list[str] | None:
    """The KG relation the top subgraph used for each pattern edge, in edge order (None: no subgraph)."""
    best = result.best
    if best is None:
        return None
    triples = best.triples(kg)
    return [str(triples[j][1]) for j in range(n_edges)] if len(triples) == n_edges else None


def measure(kg, retriever, items, pattern_of, config) -> list[dict]:
    rows = []
    for q in items:
        pattern = pattern_of(q)
        check = validate_pattern(pattern)
        gold_rel = [str(r) for r, _ in q.chain]
        row = {"id": q.qid, "qtype": q.qtype, "answerable": bool(q.answerable)}
        if not check.ok or len(check.pattern.edges) != len(gold_rel):
            row.update({"pattern_ok": False, "top1_hit": False, "evidence_hit": False, "relations": None,
                        "wrong_relation": True, "triples": [list(t) for t in pattern.triples()] if pattern else None})
            rows.append(row)
            continue
        p = check.pattern
        result, _ = retriever.retrieve(p, config)
        gold = {normalize_answer(a) for a in q.answers}
        best = result.best
        top1 = str(kg.entity_names[best.nodes[p.answer]]) if best is not None and p.answer in best.nodes else None
        evidence = {normalize_answer(str(kg.entity_names[x])) for x in result.evidence_entities()}
        used = top_relations(kg, result, len(p.edges))
        row.update({
            "pattern_ok": True,
            "triples": [list(t) for t in p.triples()],
            "top1": top1,
            "top1_hit": top1 is not None and normalize_answer(top1) in gold,
            "evidence_hit": bool(evidence & gold),
            "relations": used,
            "wrong_relation": used != gold_rel,
            "wrong_pairs": [[g, u] for g, u in zip(gold_rel, used or [None] * len(gold_rel)) if g != u],
            "gsd_top1": round(float(best.gsd), 5) if best is not None else None,
            "timed_out": bool(result.timed_out),
        })
        rows.append(row)
    return rows


def copied_pattern(wording):
    """The pattern a perfect copy of a same-template demonstration gives: the question's own chain, by pattern_demo."""
    def make(q):
        demo = pattern_demo(q, "movies", wording=wording)
        last = f" {len(q.chain)}"  # the answer: the last numbered UNKNOWN, as pattern_demo names it
        answer = next((x for t in demo["triples"] for x in (t[0], t[2]) if x.startswith("UNKNOWN ") and x.endswith(last)),
                      None)
        return Pattern.from_triples(demo["triples"], answer=answer)
    return make


def summarize(rows: list[dict], oracle_rows: list[dict] | None) -> dict:
    """Rates, counts, and per question type "n=.. top1=.. evidence=.. wrong_relation=.. pattern_stage=.." for the
    types with any miss; `misses`: per question that is not a clean hit, what went wrong (ids only, no names)."""
    n = len(rows)
    answerable = [r for r in rows if r["answerable"]]
    oracle_ev = {r["id"]: r["evidence_hit"] for r in (oracle_rows or rows)}
    stage = lambda r: not r["evidence_hit"] and bool(oracle_ev.get(r["id"]))  # noqa: E731
    by_type: dict = {}
    for r in rows:
        by_type.setdefault(str(r["qtype"]), []).append(r)
    types = {}
    for t, rs in sorted(by_type.items(), key=lambda kv: (-len(kv[1]), kv[0])):
        c = [len(rs), sum(r["top1_hit"] for r in rs), sum(r["evidence_hit"] for r in rs),
             sum(bool(r["wrong_relation"]) for r in rs), sum(stage(r) for r in rs)]
        if c[1] < c[0] or c[3] or c[4]:
            types[t] = "n={} top1={} evidence={} wrong_relation={} pattern_stage={}".format(*c)
    misses = {}
    for r in rows:
        if r["top1_hit"] and not r["wrong_relation"]:
            continue
        what = [w for w, bad in (("top1 miss", not r["top1_hit"]), ("evidence miss", not r["evidence_hit"]),
                                 ("pattern stage", stage(r))) if bad]
        what += [f"{g} -> {u}" for g, u in (r.get("wrong_pairs") or [])]
        if not r.get("pattern_ok", True):
            what.append("no usable pattern")
        misses[r["id"]] = "; ".join(what)
    pairs = Counter(f"{g} -> {u}" for r in rows for g, u in (r.get("wrong_pairs") or []))
    rate = lambda rs, k: round(100.0 * sum(bool(r[k]) for r in rs) / len(rs), 1) if rs else None  # noqa: E731
    return {
        "n": n, "n_answerable": len(answerable),
        "top1_hit": rate(rows, "top1_hit"), "evidence_hit": rate(rows, "evidence_hit"),
        "top1_hit_answerable": rate(answerable, "top1_hit"), "evidence_hit_answerable": rate(answerable, "evidence_hit"),
        "wrong_relation": sum(bool(r["wrong_relation"]) for r in rows),
        "pattern_stage_misses": sum(stage(r) for r in rows),
        "timed_out": sum(bool(r.get("timed_out")) for r in rows),
        "wrong_relation_edges": dict(pairs.most_common()),
        "qtypes_with_misses": types,
        "misses": misses,
    }


def cosines(embedder, kg_relations: list[str], wordings: dict[str, dict]) -> dict:
    """MiniLM cosine of every wording's words (and the current file's) against every KG relation name, nearest first."""
    words = sorted({spec["words"] for w in wordings.values() for spec in w.values()})
    names = [embedding_text(r) for r in kg_relations]
    vw = np.asarray(embedder.encode([embedding_text(w) for w in words]), dtype=np.float64)
    vr = np.asarray(embedder.encode(names), dtype=np.float64)
    vw /= np.linalg.norm(vw, axis=1, keepdims=True)
    vr /= np.linalg.norm(vr, axis=1, keepdims=True)
    sim = vw @ vr.T
    return {w: ", ".join(f"{r} {s:.3f}" for r, s in sorted(zip(kg_relations, row), key=lambda x: -x[1]))
            for w, row in zip(words, sim)}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--datasets", nargs="+", default=list(DATASETS))
    ap.add_argument("--limit", type=int, default=200)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--embedder", default="minilm")
    ap.add_argument("--index", default="auto", choices=("auto", "flat", "hnsw"))
    ap.add_argument("--candidate", action="append", default=[],
                    help='label=JSON {KG relation: {"words", "subject", "forward", "backward"}}: one more wording')
    ap.add_argument("--only", nargs="*", default=None, help="measure only these wording labels (current is always in)")
    ap.add_argument("--misses-for", nargs="*", default=["oracle (KG relation names)", "current", "acted in", "starred in"],
                    help="wordings whose per-question misses are written (ids and what went wrong); the rest: counts")
    ap.add_argument("--out", type=Path, default=Path("benchmarks/results/simgrag_demo_wording.json"))
    args = ap.parse_args(argv)

    wordings: dict[str, dict] = {"current": {}}
    extra = dict(CANDIDATES)
    for text in args.candidate:
        label, _, spec = text.partition("=")
        extra[label.strip()] = json.loads(spec)
    wordings.update({k: v for k, v in extra.items() if args.only is None or k in args.only})
    file_relations, _ = demo_wording("movies")
    # the effective entries (the file's, with each candidate's keys over them), recorded as measured
    effective = {label: {r: {**file_relations.get(r, {}), **w.get(r, {})} for r in {**file_relations, **w}}
                 for label, w in wordings.items()}

    config = SimGRAGConfig(anchor_entity=True).gsd_config()
    embedder = load_embedder(args.embedder)
    t0 = time.perf_counter()
    out_hops = {}
    retriever, kg_key = None, None
    for name in args.datasets:
        data = load_dataset(name, split="test", limit=args.limit, seed=args.seed)
        key = (data.kg.num_entities, data.kg.num_edges)
        if retriever is None or key != kg_key:  # MetaQA's hops share one KB: embed and index it once
            retriever, kg_key = GSDRetriever.from_embedder(data.kg, embedder, index_kind=args.index), key
            retriever.retrieve(validate_pattern(oracle_pattern(data.items[0])).pattern, config)  # compile the kernel
        items = [q for q in data.items if q.chain and q.topic_entities]
        oracle_rows = measure(data.kg, retriever, items, oracle_pattern, config)
        hop = {"oracle (KG relation names)": summarize(oracle_rows, None)}
        keep = set(args.misses_for)
        for label, w in wordings.items():
            rows = measure(data.kg, retriever, items, copied_pattern(w), config)
            hop[label] = summarize(rows, oracle_rows)
            print(f"{name} {label:34s} top1 {hop[label]['top1_hit']:5.1f} evidence {hop[label]['evidence_hit']:5.1f} "
                  f"wrong relation {hop[label]['wrong_relation']:3d} pattern-stage misses "
                  f"{hop[label]['pattern_stage_misses']:3d}", flush=True)
        for label in hop:
            if label not in keep:
                hop[label].pop("misses")
        out_hops[name] = {"n_questions": len(data.items), "n_measured": len(items), "wordings": hop}
    load = os.getloadavg()
    result = {
        "benchmark": "simgrag_demo_wording",
        "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "what": "retrieval of each test question's own gold chain written as pattern_demo() writes a demonstration "
                "(a perfect copy of a same-template nearest demonstration), per demonstration wording; no LLM",
        "sample": {"split": "test", "limit": args.limit, "seed": args.seed},
        "search": {**{k: getattr(config, k) for k in ("top_k", "entity_topk", "relation_topk", "injective",
                                                      "direction", "time_limit_s")},
                   "note": "SimGRAGConfig's defaults, as the 1.5B e2e runs (--anchor-entity true only constrains the "
                           "LLM's decoding; a copied pattern names the anchor anyway)"},
        "embedder": args.embedder, "index": retriever.index_kind if retriever else None,
        "metric_note": "top1_hit: the top-1 subgraph's answer node (the last UNKNOWN) is a gold answer; evidence_hit: "
                       "some node of the top-k subgraphs is (the e2e runs' retrieval_hit); wrong_relation: questions "
                       "whose top subgraph uses another KG relation than the gold chain on some edge; "
                       "pattern_stage_misses: evidence_hit false while the oracle pattern's is true (what the e2e runs "
                       "blame on the pattern stage); rates in % of n",
        "wording_in_prompt_file": file_relations,
        "candidates": {label: w for label, w in wordings.items() if w},
        "cosine_words_vs_kg_relations": cosines(embedder, [str(r) for r in retriever.kg.relation_names], effective),
        "hops": out_hops,
        "seconds": round(time.perf_counter() - t0, 1),
        "machine": {"platform": platform.platform(), "cpus": os.cpu_count(),
                    "load_average_at_end": [round(x, 2) for x in load]},
    }
    print(f"wrote {write_result(args.out, result, args)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
