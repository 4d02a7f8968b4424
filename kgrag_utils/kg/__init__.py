"""A directed knowledge graph held as flat integer arrays, built for 10M-edge graphs.

Entities and relations have integer ids and name <-> id vocabularies. Every fact (edge) has an
id; `heads[e]`, `rels[e]`, `tails[e]` describe edge `e`. Two compressed sparse row (CSR) indexes
serve lookups in both directions:

* out-index: edge ids sorted by (head, relation, tail), with `indptr` per head and one group
  per (head, relation) pair, so "edges of relation r leaving entity x" is one binary search;
* in-index: the same sorted by (tail, relation, head).

Traversals (relation chains, k-hop neighbourhoods) work a whole frontier at a time with numpy
range expansion (`np.repeat` / `cumsum`), so there is no Python loop per edge anywhere.

Modules, one responsibility each (arrows point down):

* `graph`   - the `KG` class: construction, vocabularies, id validation, traversals, export;
* `chains`  - `ChainResult` and `complete_paths`, the backward pruning of a followed chain;
* `storage` - the .npz cache (`KG.save` / `KG.load_npz` / `KG.load_cached`);
* `text`    - reading `head|relation|tail` fact files with pyarrow;
* `arrays`  - name-free array primitives: range expansion, sorted membership, dedupe, CSR index.
"""

from __future__ import annotations

from .chains import ChainResult
from .graph import KG
from .storage import NPZ_FORMAT_VERSION

__all__ = ["KG", "ChainResult", "NPZ_FORMAT_VERSION"]
