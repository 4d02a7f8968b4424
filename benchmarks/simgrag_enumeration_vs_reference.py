"""GSD enumeration alone, ours against the SimGRAG reference code, on MetaQA oracle patterns.

    python benchmarks/simgrag_enumeration_vs_reference.py --reference /path/to/SimGRAG \
        --limit 1000 --out benchmarks/results/simgrag_enumeration_vs_reference.json

The reference (YZ-Cai/SimGRAG at REFERENCE_COMMIT, checked out outside this repository and passed by path) is
imported in this process with its Milvus store and embedder replaced by stand-ins that answer with the candidates
OUR filtering found (the same top-16 entities per known node, the same distances), so both sides enumerate the
same pattern over the same KB and what differs is the graph search alone.

Clocks, each per call (milliseconds):

* `ours_*`: the whole `search_topk` call on the question's prepared candidates (Python input arrays, the
  compiled call with its planning, bounds, lookups and DFS, the `Subgraph` result objects).
* `ref_call_*` (like for like with `ours_*`): the reference's `retrieve` call less its own `embedding_time` and
  `vector_search_time`: query graph (networkx), root choice and DFS edge order, greedy bounds, DFS, `results.get()`.
* `ours_total_*` / `ref_total_*` (text encoding excluded): ours is `GSDRetriever.candidates` (the FAISS search of
  `--index` over all entity names, exact re-scoring, relation distances) less its `encode_ms`, plus the search
  call after it (a second, complete retrieval); the reference's is its whole `retrieve` less `embedding_time`,
  its vector search being the stand-in stores' lookups behind its thread pool (a real Milvus adds to its side).
* `ours_filter_*` / `ref_filter_*`: the filtering inside the totals: ours `candidates` less its encoding (flat
  `--index`: every vector read); the reference's `vector_search_time` (a ThreadPoolExecutor started and joined
  per call, reading the stand-ins and building its candidate dictionaries).
* `ours_dfs_*` / `ref_*` (DFS clocks): ours inside the compiled call (`SearchResult.dfs_ms`, CLOCK_MONOTONIC)
  from the empty top k through the DFS from every root candidate; the reference's own `graph_search_time` from
  its `kSmallest` through sorting the root's candidates and its DFS (which deep-copies every mapping it extends).

`speedup_call_*`, `speedup_total_*`, `speedup_dfs_*` and `speedup_filter_*` divide the reference's clock by ours;
`speedup_*` (as in earlier records) the reference's DFS clock by our whole search call. Not like for like: the
totals leave out what Milvus would add to the reference; its thread pool waits for CPU time slices, so its filter
clock grows with the machine's load; its candidate dictionaries are built in its vector-search time (outside
`ref_call_*`) while our equivalent is inside `ours_*`.

Per question each side runs `--repeats` times, alternating which goes first; a question's time is the median of
its runs, and the JSON reports the median and p95 over questions. Hits@1: the top-1 subgraph's answer node is a
gold answer (normalised names); `same_topk_gsd`: both return the same top-k GSD values. The load average is
recorded before and after.
"""

from __future__ import annotations

import argparse
import gc
import os
import sys
import time
import types
from dataclasses import replace
from pathlib import Path

import numpy as np

from kgrag_utils.datasets import load_dataset
from kgrag_utils.methods.simgrag.stages.gsd_search import GSDConfig, GSDRetriever, search_topk
from kgrag_utils.methods.simgrag.stages.oracle import oracle_pattern
from kgrag_utils.metrics import normalize_answer
from kgrag_utils.provenance import git_commit
from kgrag_utils.records import write_result

REFERENCE_COMMIT = "dac778325411816ba2a07485acf2481fc1d5025b"


# ----------------------------------------------------------------------------- the reference, fed our candidates


class _Store:
    """Stands in for the reference's Milvus VectorStore: `search` gets the query texts (see _Model) and
    answers each with the hit list prepared for it."""

    def __init__(self):
        self.answers: dict[str, list[dict]] = {}

    def search(self, vectors, top_k):
        return [self.answers[text] for text in vectors]


class _Model:
    """Stands in for the reference's embedder: a text's "vector" is the text itself, so the stores
    can answer by name whatever order the reference lists its query nodes and relations in."""

    def encode(self, texts):
        return list(texts)


def import_reference(path: Path):
    """The reference's Retriever class, imported from its checkout with Milvus and the embedder stubbed."""
    vecdb = types.ModuleType("src.vecdb")
    vecdb.VectorStore = _Store
    emb = types.ModuleType("src.embedding_model")
    emb.EmbeddingModel = _Model
    sys.modules["src.vecdb"], sys.modules["src.embedding_model"] = vecdb, emb
    sys.path.insert(0, str(path))
    from src.retriever import Retriever  # noqa: E402  (the reference checkout)
    from src.utils import kSmallest  # noqa: E402

    get = kSmallest.get

    def get_and_keep(self):  # its k smallest GSDs, before get() puts the best walk second
        _LAST_HEAP[:] = sorted(-neg for neg, _, _ in self.heap)[: self.k]
        return get(self)

    kSmallest.get = get_and_keep
    return Retriever


_LAST_HEAP: list[float] = []


def reference_kg(kg) -> dict:
    """The reference's KG layout: {entity: {relation: [neighbours]}}, both directions, deduplicated."""
    out: dict[str, dict[str, list[str]]] = {}
    names, rels = kg.entity_names, kg.relation_names
    for h, r, t in zip(kg.heads.tolist(), kg.rels.tolist(), kg.tails.tolist()):
        hn, rn, tn = str(names[h]), str(rels[r]), str(names[t])
        out.setdefault(hn, {}).setdefault(rn, []).append(tn)
        out.setdefault(tn, {}).setdefault(rn, []).append(hn)
    for adj in out.values():
        for rn in adj:
            adj[rn] = list(set(adj[rn]))
    return out


def make_reference(Retriever, kg, top_k: int):
    ref = Retriever.__new__(Retriever)
    ref.KG = reference_kg(kg)
    ref.timeout, ref.final_topk = 600, top_k
    ref.node_sim_topk = ref.relation_sim_topk = 16
    ref.use_type_candidates = False
    ref.model, ref.node_vector_store, ref.relation_vector_store = _Model(), _Store(), _Store()
    return ref


def reference_inputs(ref, kg, pattern, cand):
    """(query graph, node answers, relation answers) in the reference's formats, from our candidates."""
    label = [n.label if (n.known or "UNKNOWN" in n.label) else f"UNKNOWN {n.label}" for n in pattern.nodes]
    graph = [[label[e.head], e.relation, label[e.tail]] for e in pattern.edges]
    # Milvus returns squared L2 distances; the reference takes their square roots
    nodes = {label[v]: [{"entity": {"name": str(kg.entity_names[i])}, "distance": float(d) ** 2}
                        for i, d in zip(cand.node_ids[v].tolist(), cand.node_dist[v].tolist())]
             for v in pattern.known_nodes}
    rels = {}
    for j, e in enumerate(pattern.edges):
        ids, dist = cand.relation_candidates(j)
        rels.setdefault(e.relation, [{"entity": {"name": str(kg.relation_names[i])}, "distance": float(d) ** 2}
                                     for i, d in zip(ids.tolist(), dist.tolist())])
    return graph, nodes, rels, label


def reference_answer(ref, graph, result, answer_label):
    """The answer node of the reference's top-1 subgraph, replaying its DFS edge order from the root (the one
    known query node, whose KG node starts the first triple)."""
    import networkx as nx

    Q = nx.Graph()
    for h, r, t in graph:
        Q.add_edge(h, t, relation=r)
    known = [x for x in Q.nodes() if "UNKNOWN" not in x]
    if not result["results"] or len(known) != 1:
        return None
    edges = result["results"][0][1]
    mapping = {known[0]: edges[0][0]}
    for (_u, w), (_, _, kg_w) in zip(ref._dfs_all_edges(Q, known[0], []), edges):
        mapping[w] = kg_w
    return mapping.get(answer_label)


# ----------------------------------------------------------------------------- timing


def ours_once(retriever, pattern, cand, config):
    """(whole search call ms, total retrieval ms (no encoding), DFS ms, filtering ms (no encoding), result).
    The search call is timed on the question's prepared candidates (as in earlier records), the total on a
    second, complete retrieval: `candidates` (less its encoding) and the search call right after it."""
    t0 = time.perf_counter()
    res = search_topk(retriever.incidence, pattern, cand, config)
    call = (time.perf_counter() - t0) * 1e3
    t1 = time.perf_counter()
    fresh = retriever.candidates(pattern, config)
    t2 = time.perf_counter()
    search_topk(retriever.incidence, pattern, fresh, config)
    t3 = time.perf_counter()
    encode = fresh.timings.get("encode_ms", 0.0)
    return call, (t3 - t1) * 1e3 - encode, res.dfs_ms, (t2 - t1) * 1e3 - encode, res


def ref_once(ref, inputs):
    """(whole graph search ms, total retrieval ms (no encoding), DFS ms, vector search ms, result)."""
    graph, ref.node_vector_store.answers, ref.relation_vector_store.answers, _ = inputs
    t0 = time.perf_counter()
    res = ref.retrieve(graph, mode="greedy")
    wall = (time.perf_counter() - t0) * 1e3
    res["k_smallest"] = list(_LAST_HEAP)
    total = wall - res["embedding_time"] * 1e3
    vector = res["vector_search_time"] * 1e3
    return total - vector, total, res["graph_search_time"] * 1e3, vector, res


OURS_CLOCKS = ("ours_ms", "ours_total_ms", "ours_dfs_ms", "ours_filter_ms")
REF_CLOCKS = ("ref_call_ms", "ref_total_ms", "ref_ms", "ref_filter_ms")
CLOCKS = OURS_CLOCKS + REF_CLOCKS


def time_question(i, retriever, ref, pattern, cand, config, inputs, repeats):
    """Medians over `repeats` runs per side, alternating which side goes first: ({clock: ms}, our result,
    the reference's result)."""
    times: dict[str, list[float]] = {k: [] for k in CLOCKS}
    sides = ((OURS_CLOCKS, lambda: ours_once(retriever, pattern, cand, config)),
             (REF_CLOCKS, lambda: ref_once(ref, inputs)))
    last = [None, None]
    for rep in range(repeats):
        for side in ((0, 1) if (i + rep) % 2 == 0 else (1, 0)):
            *t, last[side] = sides[side][1]()
            for k, v in zip(sides[side][0], t):
                times[k].append(v)
    return {k: float(np.median(v)) for k, v in times.items()}, last[0], last[1]


def pct(values, q):
    return round(float(np.percentile(np.asarray(values), q)), 5)


def run_hop(hop, args, Retriever, cache) -> dict:
    data = load_dataset(f"metaqa-{hop}hop", split="test", limit=args.limit, seed=args.seed)
    kg = data.kg
    if "retriever" not in cache:  # one KB for all hops: embed, index and lay out once
        cache["retriever"] = GSDRetriever.from_embedder(kg, args.embedder, index_kind=args.index)
        cache["ref"] = make_reference(Retriever, kg, args.top_k)
        gc.collect()
        gc.freeze()  # the KG, both layouts and the index leave the collector's view: no side pays for the other's heap
    retriever, ref = cache["retriever"], cache["ref"]
    config = GSDConfig(top_k=args.top_k, injective=args.injective, time_limit_s=None)
    rows = []
    for i, q in enumerate(data.items):
        p = oracle_pattern(q)
        if p is None or not all(kg.has_entity(p.nodes[v].label) for v in p.known_nodes):
            continue
        cand = retriever.candidates(p, config)
        inputs = reference_inputs(ref, kg, p, cand)
        clocks, ours_res, ref_res = time_question(i, retriever, ref, p, cand, config, inputs, args.repeats)
        gold = {normalize_answer(a) for a in q.answers}
        best = ours_res.best
        ours_pred = str(kg.entity_names[best.nodes[p.answer]]) if best is not None else None
        ref_pred = reference_answer(ref, inputs[0], ref_res, inputs[3][p.answer])
        # the reference counts every mapping (no fact-set dedup): compare with ours counting the same way
        every = search_topk(retriever.incidence, p, cand, replace(config, distinct=False))
        ours_scores = [sg.gsd for sg in every.subgraphs]
        same = len(ours_scores) == len(ref_res["k_smallest"]) and np.allclose(ours_scores, ref_res["k_smallest"],
                                                                              rtol=0, atol=1e-9)
        rows.append({**clocks, "same_topk_gsd": bool(same),
                     "hit_ours": ours_pred is not None and normalize_answer(ours_pred) in gold,
                     "hit_ref": ref_pred is not None and normalize_answer(ref_pred) in gold,
                     "ours_pred": ours_pred, "ref_pred": ref_pred})
    col = {k: [r[k] for r in rows] for k in CLOCKS}
    out = {"n": len(rows)}
    for k in CLOCKS:
        name = k[:-3]
        out[f"{name}_median_ms"], out[f"{name}_p95_ms"] = pct(col[k], 50), pct(col[k], 95)
    for label, ref_k, ours_k in (("_call", "ref_call", "ours"), ("_total", "ref_total", "ours_total"),
                                 ("_dfs", "ref", "ours_dfs"), ("_filter", "ref_filter", "ours_filter"),
                                 ("", "ref", "ours")):
        for q in ("median", "p95"):
            out[f"speedup{label}_{q}"] = round(out[f"{ref_k}_{q}_ms"] / out[f"{ours_k}_{q}_ms"], 2)
    out.update({
        "hits@1_ours": round(100 * float(np.mean([r["hit_ours"] for r in rows])), 2),
        "hits@1_ref": round(100 * float(np.mean([r["hit_ref"] for r in rows])), 2),
        "same_topk_gsd": round(float(np.mean([r["same_topk_gsd"] for r in rows])), 4),
        "top1_differs": sum(r["ours_pred"] != r["ref_pred"] for r in rows),
    })
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--reference", type=Path, required=True, help="a checkout of YZ-Cai/SimGRAG (outside this repo)")
    ap.add_argument("--hops", default="1,2,3")
    ap.add_argument("--limit", type=int, default=1000, help="seeded sample of test questions per hop")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--repeats", type=int, default=3, help="runs per question and side (median)")
    ap.add_argument("--top-k", type=int, default=3)
    ap.add_argument("--injective", action=argparse.BooleanOptionalAction, default=GSDConfig().injective)
    ap.add_argument("--embedder", default="minilm")
    ap.add_argument("--index", default="flat", help="entity index for the shared candidates (flat: exact)")
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args(argv)
    Retriever = import_reference(args.reference)
    load_before = [round(x, 2) for x in os.getloadavg()]
    cache: dict = {}
    hops = {}
    t0 = time.time()
    for hop in [int(h) for h in args.hops.split(",")]:
        gc.collect()
        hops[f"{hop}hop"] = run_hop(hop, args, Retriever, cache)
        print(hop, hops[f"{hop}hop"], flush=True)
    result = {
        "benchmark": "simgrag_enumeration_vs_reference",
        "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "commit": git_commit()["commit"], "reference_commit": REFERENCE_COMMIT,
        "params": {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items() if k != "reference"},
        "machine": {"load_average_before": load_before, "load_average_after": [round(x, 2) for x in os.getloadavg()]},
        "wall_s": round(time.time() - t0, 1),
        "method": __doc__.split("\n\n", 2)[2].strip(),
        "hops": hops,
    }
    if args.out is not None:
        print(f"wrote {write_result(args.out, result)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
