"""GSD enumeration alone, ours against the SimGRAG reference code, on MetaQA oracle patterns.

    python benchmarks/simgrag_enumeration_vs_reference.py --reference /path/to/SimGRAG \
        --limit 1000 --out benchmarks/results/simgrag_enumeration_vs_reference.json

The reference (YZ-Cai/SimGRAG at the commit named in REFERENCE_COMMIT, checked out outside this
repository and passed by path; nothing of it is copied here) is imported in this process with its
Milvus store and embedding model replaced by stand-ins that answer with the candidates OUR filtering
stage found: the same top-16 entities per known node with the same Euclidean distances, the same
relation distances. Both sides then enumerate the same pattern over the same KB, so what differs is
the graph search alone:

Clocks, each per call (milliseconds):

* `ours_*` (whole search call): the whole `search_topk` call on the question's prepared candidates, timed
  around it: the Python input arrays, the compiled call (components, root choice, DFS edge order,
  admissible bounds, candidate lookups, the DFS) and the `Subgraph` result objects.
* `ref_call_*` (the reference's whole graph search, like for like with `ours_*`): its `retrieve` call
  timed around it, less its own `embedding_time` and `vector_search_time`: the query graph's
  construction (networkx), the root choice and DFS edge order (`_dfs_all_edges`), the greedy bounds, its
  DFS and `results.get()` (the final ordering).
* `ours_total_*` / `ref_total_*` (total retrieval, text encoding excluded on both sides): ours is
  `GSDRetriever.candidates` (the FAISS search of `--index` over all entity names, exact re-scoring,
  relation distances) less its `encode_ms`, plus the whole search call right after it (a second,
  complete retrieval per run); the reference's is its whole
  `retrieve` call less its `embedding_time`, where its vector search is the stand-in stores' dictionary
  lookups behind its thread pool (a real Milvus search would add to its side only).
* `ours_filter_*` / `ref_filter_*` (the filtering inside the totals): ours is `candidates` less its
  encoding (the `--index` search over every entity name, flat: every vector read, about 65 MB per known
  node on MetaQA; exact re-scoring; relation distances); the reference's is its `vector_search_time`: a
  ThreadPoolExecutor started and joined per call whose three tasks read the stand-in stores' answers and
  build its candidate dictionaries.
* `ours_dfs_*` and `ref_*` (the DFS clocks): ours measured inside the compiled call (`SearchResult.dfs_ms`,
  clock_gettime(CLOCK_MONOTONIC)) from creating the empty top k through the DFS from every root candidate;
  the reference's own `graph_search_time` from creating its `kSmallest` through sorting the root's
  candidates and its DFS (which deep-copies every mapping it extends). Both leave out the planning, the
  bounds, the lookups and the result objects.

`speedup_call_*` divides the reference's whole graph search by our whole search call (like for like),
`speedup_total_*` the totals, `speedup_dfs_*` the DFS clocks, `speedup_filter_*` the filtering; `speedup_*`
(as in earlier records) the reference's DFS clock by our whole search call.

What is not like for like: in the totals, our side runs a real nearest-neighbour search and the reference's
none (its Milvus HNSW search, a call to a server, is what the stand-ins replace), so `speedup_total_*`
leaves out whatever Milvus would add to the reference; and the reference's thread pool waits for CPU time
slices to start and join its threads, so `ref_filter_*` (and its total) grows with the machine's load more
than a single-threaded clock does. In the whole-call clocks, the reference's candidate dictionaries (the
square roots of the stores' distances) are built inside its vector-search time, which `ref_call_*` leaves
out, while our equivalent (candidates sorted by id, their minima, the allowed relations) is inside `ours_*`.

Per question each side runs `--repeats` times, alternating which side goes first, and a question's
time is the median of its runs; the JSON reports the median and p95 over questions. Hits@1 is
whether the top-1 subgraph's answer node is a gold answer (normalised names), for both sides, and
`same_topk_gsd` whether both return the same top-k GSD values. The machine is shared: the load
average is recorded before and after.
"""

from __future__ import annotations

import argparse
import gc
from dataclasses import replace
import os
import platform
import sys
import time
import types
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

    def count(self):  # pragma: no cover - only the reference's constructor asks
        return 0


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
    return graph, nodes, rels, None, label


def run_reference(ref, graph, nodes, rels, rel_names):
    ref.node_vector_store.answers = nodes
    ref.relation_vector_store.answers = rels
    return ref.retrieve(graph, mode="greedy")


def reference_answer(ref, graph, result, answer_label):
    """The answer node of the reference's top-1 subgraph, replaying its DFS edge order."""
    import networkx as nx

    if not result["results"]:
        return None, []
    Q = nx.Graph()
    for h, r, t in graph:
        Q.add_edge(h, t, relation=r)
    edges = result["results"][0][1]
    # the root is the first edge's mapped query node: the one whose KG node starts the first triple
    known = [x for x in Q.nodes() if "UNKNOWN" not in x]
    root = known[0] if len(known) == 1 else None
    if root is None:
        return None, [s for s, _, _ in result["results"]]
    seq = ref._dfs_all_edges(Q, root, [])
    mapping = {root: edges[0][0]}
    for (u, w), (_, _, kg_w) in zip(seq, edges):
        mapping[w] = kg_w
    return mapping.get(answer_label), [s for s, _, _ in result["results"]]


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
    graph, nodes, rels, rel_names, _ = inputs
    t0 = time.perf_counter()
    res = run_reference(ref, graph, nodes, rels, rel_names)
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
    ours_res = ref_res = None
    for rep in range(repeats):
        first_ours = (i + rep) % 2 == 0
        for side in ((0, 1) if first_ours else (1, 0)):
            if side == 0:
                *t, ours_res = ours_once(retriever, pattern, cand, config)
                keys = OURS_CLOCKS
            else:
                *t, ref_res = ref_once(ref, inputs)
                keys = REF_CLOCKS
            for k, v in zip(keys, t):
                times[k].append(v)
    return {k: float(np.median(v)) for k, v in times.items()}, ours_res, ref_res


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
        ref_pred, ref_scores = reference_answer(ref, inputs[0], ref_res, inputs[4][p.answer])
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
        "machine": {"platform": platform.platform(), "python": platform.python_version(), "numpy": np.__version__,
                    "cpus": os.cpu_count(), "load_average_before": load_before,
                    "load_average_after": [round(x, 2) for x in os.getloadavg()]},
        "wall_s": round(time.time() - t0, 1),
        "method": __doc__.split("\n\n", 2)[2].strip(),
        "hops": hops,
    }
    if args.out is not None:
        print(f"wrote {write_result(args.out, result)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
