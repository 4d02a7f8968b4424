"""WebQSP and CWQ as released by RoG (Luo et al., ICLR 2024): one subgraph per question, in parquet.

Files (huggingface.co/datasets/rmanluo/RoG-webqsp and .../RoG-cwq, `data/{split}-NNNNN-of-NNNNN-*.parquet`,
split in train / validation / test). Columns, as the datasets' cards declare them:
`id` string, `question` string, `answer` list<string>, `q_entity` list<string>, `a_entity`
list<string>, `graph` list<list<string>> (the question's own triples [head, relation, tail]),
`choices` list<null> (empty). Entities are Freebase names where one exists, otherwise the Freebase
id (m.0abc...), and ids stay ids here.

Each question becomes a `KGQuestion` (topic entities = q_entity, answers = answer, a_entity in
meta). The triples stay in Arrow memory: `Dataset.triples` is a read-only mapping qid -> list of
(h, r, t) decoded on access, and `QuestionGraphs.kg(qid)` builds that question's directed `KG`
from the Arrow buffers without a Python loop per triple.

With `paths=True` (default) each question also gets RoG's weak supervision: the shortest
topic-to-answer paths in its graph (ignoring edge direction, one search per topic entity, as
RoG's `get_truth_paths` does), kept as relation chains `[(relation, forward), ...]` in
`meta["shortest_chains"]` (the first one in `chain`), plus `answerable` (every a_entity reachable
from a topic entity) and `meta["answerable_any"]`. Unlike RoG's networkx.Graph, parallel edges
with different relations between the same two entities give separate chains.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Iterator

import numpy as np
import pandas as pd

from ..errors import ConfigError, DatasetMissingError, IntegrityError
from ..kg import KG
from .items import ChainStep, KGQuestion

__all__ = ["SPLITS", "COLUMNS", "split_files", "read_table", "read_jsonl_table", "QuestionGraphs", "read_questions",
           "shortest_chains", "kg_from_triples_arrays"]

SPLITS = ("train", "validation", "test")
COLUMNS = ("id", "question", "answer", "q_entity", "a_entity", "graph", "choices")
_REQUIRED = ("id", "question", "answer", "q_entity", "a_entity", "graph")


def split_files(root: Path, split: str) -> list[Path]:
    """The parquet shards of a split: `data/{split}-*.parquet` (hub layout) or `{split}-*.parquet`."""
    if split not in SPLITS:
        raise ConfigError(f"RoG splits are {', '.join(SPLITS)} (got {split!r}).")
    root = Path(root)
    files = sorted(root.glob(f"data/{split}-*.parquet")) or sorted(root.glob(f"{split}-*.parquet"))
    if not files:
        raise DatasetMissingError(f"no {split}-*.parquet in {root / 'data'}")
    return files


def read_table(files: list[Path]):
    """The shards as one pyarrow Table with the RoG columns (a missing column is an IntegrityError)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    tables = []
    for f in files:
        try:
            schema = pq.read_schema(f)
        except (pa.ArrowInvalid, OSError) as exc:
            raise IntegrityError(f"{f} is not a readable parquet file ({exc}); re-fetch it.") from None
        missing = [c for c in _REQUIRED if c not in schema.names]
        if missing:
            raise IntegrityError(f"{f} lacks the RoG column(s) {', '.join(missing)}; is it a RoG-webqsp/cwq shard?")
        tables.append(pq.read_table(f, columns=list(_REQUIRED)))
    table = pa.concat_tables(tables) if len(tables) > 1 else tables[0]
    return table.combine_chunks()


def kg_from_triples_arrays(h: np.ndarray, r: np.ndarray, t: np.ndarray, name: str = "") -> KG:
    """A KG from three aligned string arrays (ids by pandas.factorize; duplicates dropped)."""
    codes, ents = pd.factorize(np.concatenate([h, t]))
    rcodes, rels = pd.factorize(r)
    n = h.size
    return KG.from_ids(codes[:n], rcodes, codes[n:], np.asarray(ents, dtype=object), np.asarray(rels, dtype=object),
                       name=name)


class QuestionGraphs(Mapping):
    """qid -> that question's triples [(h, r, t), ...], held in Arrow memory and decoded on access.

    Triples with other than three parts are left out (counted in `malformed`); relation names are
    stripped of surrounding whitespace, as RoG does.
    """

    def __init__(self, ids: list[str], graph_column):
        import pyarrow as pa
        import pyarrow.compute as pc

        self._rows = {qid: i for i, qid in enumerate(ids)}
        if len(self._rows) != len(ids):
            raise IntegrityError("RoG question ids repeat within a split; re-fetch the files.")
        col = graph_column.combine_chunks() if isinstance(graph_column, pa.ChunkedArray) else graph_column
        self._outer = col  # list<list<string>>
        triples = col.flatten()  # list<string>, one entry per triple
        lengths = pc.list_value_length(triples).fill_null(0).to_numpy(zero_copy_only=False)
        self._good = lengths == 3
        self.malformed = int((~self._good).sum())
        offsets = col.offsets.to_numpy()
        self._offsets = offsets - offsets[0]
        flat = triples.flatten()
        starts = triples.offsets.to_numpy()[:-1] - triples.offsets.to_numpy()[0]
        self._strings = flat
        self._starts = starts

    def __len__(self) -> int:
        return len(self._rows)

    def __iter__(self) -> Iterator[str]:
        return iter(self._rows)

    def __contains__(self, qid) -> bool:
        return qid in self._rows

    def _arrays(self, qid: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        import pyarrow as pa

        row = self._rows[qid]
        a, b = int(self._offsets[row]), int(self._offsets[row + 1])
        good = np.flatnonzero(self._good[a:b]) + a
        if good.size == 0:
            empty = np.empty(0, dtype=object)
            return empty, empty, empty
        base = self._starts[good]
        idx = np.stack([base, base + 1, base + 2], axis=1).reshape(-1)
        vals = self._strings.take(pa.array(idx)).to_numpy(zero_copy_only=False).astype(object).reshape(-1, 3)
        rel = np.array([s.strip() for s in vals[:, 1]], dtype=object)
        return vals[:, 0], rel, vals[:, 2]

    def __getitem__(self, qid: str) -> list[tuple[str, str, str]]:
        h, r, t = self._arrays(qid)
        return list(zip(h.tolist(), r.tolist(), t.tolist()))

    def size(self, qid: str) -> int:
        """Number of well-formed triples of a question (without decoding them)."""
        row = self._rows[qid]
        return int(self._good[self._offsets[row]:self._offsets[row + 1]].sum())

    def kg(self, qid: str) -> KG:
        """The question's own directed KG (duplicate triples dropped)."""
        h, r, t = self._arrays(qid)
        return kg_from_triples_arrays(h, r, t, name=str(qid))

    def union_kg(self, name: str = "") -> KG:
        """One KG of every question's subgraph (duplicate triples dropped)."""
        parts = [self._arrays(q) for q in self]
        return kg_from_triples_arrays(*(np.concatenate([p[i] for p in parts]) for i in range(3)), name=name)

    def __repr__(self) -> str:
        return f"QuestionGraphs({len(self):,} questions, {int(self._good.sum()):,} triples)"


def _undirected_csr(kg: KG):
    from scipy.sparse import csr_matrix

    n = kg.num_entities
    rows = np.concatenate([kg.heads, kg.tails]).astype(np.int64)
    cols = np.concatenate([kg.tails, kg.heads]).astype(np.int64)
    return csr_matrix((np.ones(rows.size, dtype=np.int8), (rows, cols)), shape=(n, n))


def shortest_chains(kg: KG, topics: list[str], answers: list[str], max_chains: int = 64
                    ) -> tuple[list[list[ChainStep]], dict[str, int]]:
    """Relation chains of all shortest paths from each topic entity to each answer entity.

    Direction is ignored while searching (RoG's get_truth_paths) but recorded in the chain: a step
    (r, True) walks a fact head -> tail, (r, False) tail -> head. Returns (distinct chains in a stable
    order, shortest distance per reachable answer). `max_chains` caps the chains kept.
    """
    from scipy.sparse.csgraph import shortest_path

    names = pd.Index(kg.entity_names)
    topic_ids = [int(i) for i in names.get_indexer([t for t in topics]) if i >= 0]
    answer_ids = np.unique(np.asarray([i for i in names.get_indexer(list(answers)) if i >= 0], dtype=np.int64))
    if not topic_ids or answer_ids.size == 0 or kg.num_edges == 0:
        return [], {}
    adj = _undirected_csr(kg)
    dist = shortest_path(adj, method="D", unweighted=True, directed=True, indices=topic_ids)
    heads, tails, rels = kg.heads.astype(np.int64), kg.tails.astype(np.int64), kg.rels.astype(np.int64)
    chains: dict[tuple, None] = {}
    best: dict[str, int] = {}
    for row, topic in enumerate(topic_ids):
        d = dist[row]
        reach = answer_ids[np.isfinite(d[answer_ids]) & (answer_ids != topic)]
        for a in reach.tolist():
            name = str(kg.entity_names[a])
            best[name] = min(best.get(name, 1 << 30), int(d[a]))
        if reach.size == 0:
            continue
        # DAG edges of the BFS from this topic: forward facts h->t with d[t] == d[h] + 1, and reverse ones
        fwd = np.isfinite(d[heads]) & (d[tails] == d[heads] + 1)
        bwd = np.isfinite(d[tails]) & (d[heads] == d[tails] + 1)
        # (closer node, farther node, relation, forward?)
        near = np.concatenate([heads[fwd], tails[bwd]])
        far = np.concatenate([tails[fwd], heads[bwd]])
        rel = np.concatenate([rels[fwd], rels[bwd]])
        forward = np.concatenate([np.ones(int(fwd.sum()), bool), np.zeros(int(bwd.sum()), bool)])
        order = np.argsort(far, kind="stable")
        near, far, rel, forward = near[order], far[order], rel[order], forward[order]
        starts = np.searchsorted(far, np.arange(kg.num_entities + 1))
        # walk back from every answer to the topic, carrying the chain suffix
        states = {(int(a), ()) for a in reach.tolist()}
        done: list[tuple] = []
        while states:
            nxt = set()
            for node, suffix in states:
                if node == topic:
                    done.append(suffix)
                    continue
                for j in range(starts[node], starts[node + 1]):
                    step = (int(rel[j]), bool(forward[j]))
                    nxt.add((int(near[j]), (step,) + suffix))
            if len(nxt) > 50 * max_chains:  # pathological fan-out: keep a bounded, deterministic subset
                nxt = set(sorted(nxt)[: 50 * max_chains])
            states = nxt
        for suffix in sorted(set(done)):
            chains.setdefault(suffix, None)
    out = [[(str(kg.relation_names[r]), f) for r, f in c] for c in list(chains)[:max_chains]]
    return out, best


def read_jsonl_table(path: Path):
    """RoG's rows from a JSON-lines file (`.jsonl` or `.jsonl.gz`, one question with its `graph` a line: the 18
    whole WebQSP test subgraphs of the shared copy) as a pyarrow Table with the RoG columns."""
    import pyarrow as pa

    from .rog_paths import read_rows

    rows = read_rows(Path(path))
    missing = sorted({c for r in rows for c in _REQUIRED if c not in r})
    if missing:
        raise IntegrityError(f"{path} lacks the RoG field(s) {', '.join(missing)}; is it a file in RoG form?")
    lists = {"answer", "q_entity", "a_entity"}
    columns = {c: [r[c] if c == "graph" else ([str(x) for x in r[c] or []] if c in lists else r[c]) for r in rows]
               for c in _REQUIRED}
    types = {"id": pa.string(), "question": pa.string(), "answer": pa.list_(pa.string()),
             "q_entity": pa.list_(pa.string()), "a_entity": pa.list_(pa.string()),
             "graph": pa.list_(pa.list_(pa.string()))}
    return pa.table({c: pa.array(columns[c], type=types[c]) for c in _REQUIRED})


def read_questions(root: Path, split: str, prefix: str = "rog", paths: bool = True, file: str | None = None
                   ) -> tuple[list[KGQuestion], QuestionGraphs, dict]:
    """Questions of one split, their per-question triples, and counts for Dataset.info. `file`: one JSON-lines
    file in RoG form under `root` (read_jsonl_table) instead of the split's parquet shards."""
    if file is not None:
        files = [Path(root) / file]
        if not files[0].is_file():
            raise DatasetMissingError(f"no {file} in {root}")
        table = read_jsonl_table(files[0])
    else:
        files = split_files(root, split)
        table = read_table(files)
    ids = [str(x) if x is not None else f"{prefix}-{split}-{i:05d}"
           for i, x in enumerate(table.column("id").to_pylist())]
    graphs = QuestionGraphs(ids, table.column("graph"))
    questions_text = table.column("question").to_pylist()
    answers = table.column("answer").to_pylist()
    q_ent = table.column("q_entity").to_pylist()
    a_ent = table.column("a_entity").to_pylist()
    out: list[KGQuestion] = []
    for i, qid in enumerate(ids):
        topics = [str(x) for x in (q_ent[i] or [])]
        a_entities = [str(x) for x in (a_ent[i] or [])]
        q = KGQuestion(qid=qid, question=str(questions_text[i] or ""), topic_entities=topics,
                       answers=[str(x) for x in (answers[i] or [])], chain=None, hops=0, qtype=None,
                       meta={"a_entity": a_entities, "graph_triples": graphs.size(qid), "file_row": i})
        if paths:
            kg = graphs.kg(qid)
            chains, dist = shortest_chains(kg, topics, a_entities)
            q.meta["shortest_chains"] = chains
            q.meta["answer_hops"] = dist
            q.chain = chains[0] if chains else None
            q.hops = len(chains[0]) if chains else 0
            q.answerable = bool(a_entities) and all(a in dist for a in a_entities)
            q.meta["answerable_any"] = bool(dist)
            q.meta["answerable_khop"] = q.answerable  # the registry's name for reachability ignoring direction
        out.append(q)
    info = {"files": [f.name for f in files], "graph_triples": int(graphs._good.sum()),
            "malformed_triples": graphs.malformed}
    return out, graphs, info
