"""Planning for the compiled GSD search (gsd_kernel.py): a pattern's components, each one's root and
DFS edge order, the admissible lower bounds of the remaining steps, candidate lookups sorted by id,
and the relations each pattern edge may match. All compiled with numba, as the search that uses them.
"""

from __future__ import annotations

import numba as nb
import numpy as np

__all__ = ["_components", "_order", "_bounds", "_lookups", "_allowed_relations"]


@nb.njit(cache=True)
def _components(n_v, heads, tails):
    """Component label per node, numbered in order of each component's smallest node (as
    Pattern.components orders them), and the number of components."""
    parent = np.arange(n_v)
    for j in range(heads.size):
        a, b = heads[j], tails[j]
        while parent[a] != a:
            a = parent[a]
        while parent[b] != b:
            b = parent[b]
        if a != b:
            parent[max(a, b)] = min(a, b)
    label = np.full(n_v, -1, np.int64)
    n_comp = 0
    for v in range(n_v):
        r = v
        while parent[r] != r:
            r = parent[r]
        if label[r] < 0:
            label[r] = n_comp
            n_comp += 1
        label[v] = label[r]
    return label, n_comp


@nb.njit(cache=True, inline="always")
def _edge_first(w1, j1, w2, j2, deg, known):
    """Is edge j1 (to w1) taken before j2 (to w2): by (-degree, not known, edge index)?"""
    if deg[w1] != deg[w2]:
        return deg[w1] > deg[w2]
    if known[w1] != known[w2]:
        return known[w1]
    return j1 < j2


@nb.njit(cache=True)
def _order(comp, ci, heads, tails, deg, known, has, count):
    """(root, steps) of component ci: the root has the fewest candidates (then the highest degree, then
    the lowest index); steps (mapped node, other node, edge, is_tree) follow a DFS from it that takes a
    node's edges towards higher-degree, known neighbours first (then by edge index)."""
    n_v, n_e = comp.size, heads.size
    root, best_c, best_d = -1, np.iinfo(np.int64).max, 0
    for v in range(n_v):
        if comp[v] != ci:
            continue
        c = count[v] if has[v] else np.iinfo(np.int64).max
        if root < 0 or c < best_c or (c == best_c and -deg[v] < best_d):
            root, best_c, best_d = v, c, -deg[v]
    ptr = np.zeros(n_v + 1, np.int64)  # incidence lists: (edge, other end), in edge order
    for j in range(n_e):
        if comp[heads[j]] == ci:
            ptr[heads[j] + 1] += 1
            ptr[tails[j] + 1] += 1
    for v in range(n_v):
        ptr[v + 1] += ptr[v]
    fill = ptr[:-1].copy()
    inc_j, inc_w = np.empty(ptr[n_v], np.int64), np.empty(ptr[n_v], np.int64)
    for j in range(n_e):
        if comp[heads[j]] == ci:
            h, t = heads[j], tails[j]
            inc_j[fill[h]], inc_w[fill[h]] = j, t
            fill[h] += 1
            inc_j[fill[t]], inc_w[fill[t]] = j, h
            fill[t] += 1
    for v in range(n_v):  # insertion sort by (-degree, not known, edge)
        for a in range(ptr[v] + 1, ptr[v + 1]):
            j, w = inc_j[a], inc_w[a]
            b = a - 1
            while b >= ptr[v] and _edge_first(w, j, inc_w[b], inc_j[b], deg, known):
                inc_j[b + 1], inc_w[b + 1] = inc_j[b], inc_w[b]
                b -= 1
            inc_j[b + 1], inc_w[b + 1] = j, w
    steps = np.empty((n_e, 4), np.int64)
    n_steps = 0
    visited, done = np.zeros(n_v, np.bool_), np.zeros(n_e, np.bool_)
    stack_u, stack_i = np.empty(n_v, np.int64), np.empty(n_v, np.int64)
    stack_u[0], stack_i[0], depth, visited[root] = root, ptr[root], 1, True
    while depth > 0:
        u = stack_u[depth - 1]
        a = stack_i[depth - 1]
        if a >= ptr[u + 1]:
            depth -= 1
            continue
        stack_i[depth - 1] += 1
        j, w = inc_j[a], inc_w[a]
        if done[j]:
            continue
        done[j] = True
        steps[n_steps, 0], steps[n_steps, 1], steps[n_steps, 2] = u, w, j
        steps[n_steps, 3] = 0 if visited[w] else 1
        n_steps += 1
        if not visited[w]:
            visited[w] = True
            stack_u[depth], stack_i[depth] = w, ptr[w]
            depth += 1
    return root, steps[:n_steps]


@nb.njit(cache=True)
def _bounds(steps, rel_min, node_min, has):
    """lb_rest[i]: the smallest GSD the steps from i on can add (relation minimum per edge, node minimum
    of each node a tree edge maps; a back edge's nodes are paid for already)."""
    n = steps.shape[0]
    lb_rest = np.zeros(n + 1)
    for i in range(n - 1, -1, -1):
        w, j, tree = steps[i, 1], steps[i, 2], steps[i, 3]
        lb_rest[i] = lb_rest[i + 1] + (rel_min[j] + (node_min[w] if tree and has[w] else 0.0))
    return lb_rest


@nb.njit(cache=True)
def _argsort_small(x):
    """A stable argsort by insertion (the few candidates of a pattern node)."""
    o = np.arange(x.size)
    for a in range(1, x.size):
        t = o[a]
        b = a - 1
        while b >= 0 and x[o[b]] > x[t]:
            o[b + 1] = o[b]
            b -= 1
        o[b + 1] = t
    return o


@nb.njit(cache=True)
def _lookups(has, cand_ptr, cand_ids, cand_dist):
    """Each candidate node's entities sorted by id (for lookups), with distance and rank in its list."""
    n = cand_ids.size
    ids, dist, rank = np.empty(n, np.int64), np.empty(n), np.empty(n, np.int64)
    node_min = np.full(has.size, np.inf)
    for v in range(has.size):
        a, b = cand_ptr[v], cand_ptr[v + 1]
        o = _argsort_small(cand_ids[a:b]) if b - a <= 32 else np.argsort(cand_ids[a:b], kind="mergesort")
        for t in range(b - a):
            ids[a + t], dist[a + t], rank[a + t] = cand_ids[a + o[t]], cand_dist[a + o[t]], o[t]
            node_min[v] = min(node_min[v], cand_dist[a + t])
    return ids, dist, rank, node_min


@nb.njit(cache=True)
def _allowed_relations(rel_dist):
    """Per pattern edge, the KG relations with a finite distance (ascending ids), as CSR; and the minima."""
    n_e, n_r = rel_dist.shape
    al_ptr = np.zeros(n_e + 1, np.int64)
    rel_min = np.full(n_e, np.inf)
    for j in range(n_e):
        al_ptr[j + 1] = al_ptr[j]
        for r in range(n_r):
            if rel_dist[j, r] < np.inf:
                al_ptr[j + 1] += 1
    al_ids = np.empty(al_ptr[n_e], np.int64)
    for j in range(n_e):
        k = al_ptr[j]
        for r in range(n_r):
            if rel_dist[j, r] < np.inf:
                al_ids[k] = r
                rel_min[j] = min(rel_min[j], rel_dist[j, r])
                k += 1
    return al_ptr, al_ids, rel_min
