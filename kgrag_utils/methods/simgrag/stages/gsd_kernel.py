"""The compiled GSD search: `search_pattern` does, in one call, everything `gsd_enumerate.search_topk`
describes: the pattern's components, each one's root and DFS order, the admissible bounds (those three
in gsd_plan.py), and the depth-first enumeration of candidate mappings with the top k kept in small
arrays. The last step's children are offered unsorted, ranked as sorted visiting would have met them.

The enumeration uses an explicit stack instead of recursion; each branch's children (the facts around
the mapped entity whose relation is allowed, filtered by the current k-th best) are written into one
pool and sorted by (partial GSD, tie, candidate rank, position). Everything runs compiled because a
MetaQA pattern takes tens of microseconds to search: per-call Python work (planning in Python, a dozen
numpy calls per expanded node) made the earlier Python loop slower than the reference's plain
dictionaries; benchmarks/simgrag_enumeration_vs_reference.py times both.

The time limit counts the searching thread's CPU time, clock_gettime(CLOCK_THREAD_CPUTIME_ID), the clock
behind Python's time.thread_time on Linux, checked at the first expansion and every 64 after it: a
loaded or shared machine (a CI runner, parallel test workers) then cuts no search short that an idle one
finishes, so results do not depend on the load. Compiled code is cached
next to this file (numba's cache), so a process pays the compilation once per machine.
"""

from __future__ import annotations

import sys

import numba as nb
import numpy as np
from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

from .gsd_plan import _allowed_relations, _bounds, _components, _lookups, _order

__all__ = ["search_pattern", "CPU_CLOCK_IN_LOOP", "ERR_NO_ANCHOR", "META_HEAD", "POOL_F", "POOL_I"]

#: search_pattern's error code: a component without any node that has entity candidates
ERR_NO_ANCHOR = 1

#: On Linux the loop reads CLOCK_THREAD_CPUTIME_ID (time.thread_time's clock) itself; elsewhere the time
#: limit is checked between pattern components only.
CPU_CLOCK_IN_LOOP = sys.platform.startswith("linux")


def _clock_intrinsic(clock_id: int, doc: str):
    """An intrinsic reading clock_gettime(clock_id) in seconds, called by symbol name (so the compiled code
    caches)."""
    def clock(typingctx):
        def codegen(context, builder, signature, args):
            i32, i64, f64 = ir.IntType(32), ir.IntType(64), ir.DoubleType()
            ts_t = ir.LiteralStructType([i64, i64])
            fn = cgutils.get_or_insert_function(builder.module, ir.FunctionType(i32, [i32, ts_t.as_pointer()]),
                                                "clock_gettime")
            ts = cgutils.alloca_once(builder, ts_t)
            builder.call(fn, [ir.Constant(i32, clock_id), ts])
            sec = builder.sitofp(builder.load(cgutils.gep_inbounds(builder, ts, 0, 0)), f64)
            nsec = builder.sitofp(builder.load(cgutils.gep_inbounds(builder, ts, 0, 1)), f64)
            return builder.fadd(sec, builder.fmul(nsec, ir.Constant(f64, 1e-9)))
        return types.float64(), codegen
    clock.__doc__ = doc
    return intrinsic(clock)


_clock_thread_cpu = _clock_intrinsic(3, "clock_gettime(CLOCK_THREAD_CPUTIME_ID): the time limit's clock")
_clock_monotonic = _clock_intrinsic(1, "clock_gettime(CLOCK_MONOTONIC), time.perf_counter's: the DFS clock")


if CPU_CLOCK_IN_LOOP:
    @nb.njit(cache=True)
    def _now():
        return _clock_thread_cpu()

    @nb.njit(cache=True)
    def _wall():
        return _clock_monotonic()
else:  # pragma: no cover
    @nb.njit(cache=True)
    def _now():
        return -np.inf

    @nb.njit(cache=True)
    def _wall():
        return -np.inf


_DEG_CAP = (1 << 31) - 1  # degrees above it rank as equal (c_rank = rank * 2**31 + cap - degree)


@nb.njit(cache=True, inline="always")
def _less(ca, ta, ra, pa, cb, tb, rb, pb):
    """(cost, tie, rank, position) a < b, lexicographically."""
    if ca != cb:
        return ca < cb
    if ta != tb:
        return ta < tb
    if ra != rb:
        return ra < rb
    return pa < pb


@nb.njit(cache=True)
def _sort_segment(order, lo, hi, cost, tie, rank, scratch):
    """Sort order[lo:hi] (pool indices) by (cost, tie, rank, index): insertion sort when short, else merge sort."""
    n = hi - lo
    if n < 24:
        for a in range(lo + 1, hi):
            x = order[a]
            b = a - 1
            while b >= lo and _less(cost[x], tie[x], rank[x], x, cost[order[b]], tie[order[b]], rank[order[b]], order[b]):
                order[b + 1] = order[b]
                b -= 1
            order[b + 1] = x
        return
    width = 1
    src, dst = order, scratch
    in_order = True
    while width < n:
        for left in range(lo, hi, 2 * width):
            mid, right = min(left + width, hi), min(left + 2 * width, hi)
            a, b, k = left, mid, left
            while a < mid and b < right:
                if _less(cost[src[b]], tie[src[b]], rank[src[b]], src[b], cost[src[a]], tie[src[a]], rank[src[a]], src[a]):
                    dst[k] = src[b]
                    b += 1
                else:
                    dst[k] = src[a]
                    a += 1
                k += 1
            while a < mid:
                dst[k] = src[a]
                a += 1
                k += 1
            while b < right:
                dst[k] = src[b]
                b += 1
                k += 1
        src, dst = dst, src
        in_order = not in_order
        width *= 2
    if not in_order:
        order[lo:hi] = src[lo:hi]


@nb.njit(cache=True, inline="always")
def _admits(cost, tie, t_cost, t_tie):
    return cost < t_cost or (cost == t_cost and tie < t_tie)


# ----------------------------------------------------------------------------- enumeration


@nb.njit(cache=True)
def _expand(i, partial, tie, steps, lb_rest, inc, rel_dist, al_ptr, al_ids, edge_head, has, lk, cur, flags,
            t_cost, t_tie, pool_top, pool):
    """Write step i's admitted children into the pool from pool_top, sorted; returns the new pool top."""
    indptr, nbr, rel, eid, out = inc
    lk_ptr, lk_ids, lk_dist, lk_rank = lk
    mapping, _, _, chosen, _, _ = cur
    injective, same_dir, reversal_weight, dense_scan = flags
    c_cost, c_rel, c_node, c_eid, c_tie, c_nbr, c_rank, c_ord, scratch, c_rev = pool
    u, w, j, tree = steps[i, 0], steps[i, 1], steps[i, 2], steps[i, 3] == 1
    x = mapping[u]
    s, e = indptr[x], indptr[x + 1]
    u_is_head = edge_head[j] == u
    rest = lb_rest[i + 1]
    lookup = tree and has[w]
    lo_w, hi_w = (lk_ptr[w], lk_ptr[w + 1]) if lookup else (0, 0)
    if lookup and hi_w == lo_w:
        return pool_top
    top = pool_top
    dense = e - s <= dense_scan
    for run in range(1 if dense else al_ptr[j + 1] - al_ptr[j]):
        if dense:
            a, b = s, e
        else:  # the entity's facts are sorted by relation: one allowed relation's run at a time
            r = al_ids[al_ptr[j] + run]
            a, b = s + np.searchsorted(rel[s:e], r, "left"), s + np.searchsorted(rel[s:e], r, "right")
        for p in range(a, b):
            d_rel = rel_dist[j, rel[p]]
            if not d_rel < np.inf:  # inf (or NaN) outside the edge's top-m relations
                continue
            y, f, o = nbr[p], eid[p], out[p]
            if same_dir and not (o == u_is_head or y == x):  # a self-loop (stored once) runs both ways
                continue
            node_cost, rank, step_tie = 0.0, 0, 0
            if tree:
                if lookup:
                    at = lo_w + np.searchsorted(lk_ids[lo_w:hi_w], y)
                    if at >= hi_w or lk_ids[at] != y:
                        continue
                    node_cost, rank = lk_dist[at], lk_rank[at]
                if _holds(mapping, y):
                    if injective:
                        continue
                    step_tie += 1
            elif y != mapping[w]:
                continue
            if _holds(chosen, f):  # a subgraph uses each fact once; a homomorphism may reuse one
                if injective:
                    continue
                step_tie += 1
            flipped = o != u_is_head and y != x
            if flipped:
                step_tie += reversal_weight
            total = d_rel
            if lookup:
                total = total + node_cost
            total = total + partial
            child_tie = tie + step_tie
            if not _admits(total + rest, child_tie, t_cost, t_tie):
                continue
            c_cost[top], c_rel[top], c_eid[top], c_rev[top] = total, d_rel, f, flipped
            # ties: the better-ranked candidate, then the entity with more facts (a popularity prior)
            popular = _DEG_CAP - min(indptr[y + 1] - indptr[y], _DEG_CAP) if tree else 0
            c_tie[top], c_nbr[top], c_node[top], c_rank[top] = child_tie, y, node_cost, rank * (_DEG_CAP + 1) + popular
            c_ord[top] = top
            top += 1
    if i + 1 < steps.shape[0]:  # the last step's children are offered unsorted (_offer_leaves)
        _sort_segment(c_ord, pool_top, top, c_cost, c_tie, c_rank, scratch)
    return top


@nb.njit(cache=True, inline="always")
def _holds(arr, value):
    for a in range(arr.size):
        if arr[a] == value:
            return True
    return False


@nb.njit(cache=True, inline="always")
def _same(a, b):
    for i in range(a.size):
        if a[i] != b[i]:
            return False
    return True


@nb.njit(cache=True, inline="always")
def _threshold(top, top_k):
    top_cost, top_tie, state = top[0], top[1], top[9]
    n = state[0]
    return (top_cost[n - 1], top_tie[n - 1]) if n >= top_k else (np.inf, 0)


@nb.njit(cache=True)
def _fact_set(chosen, comp_edges, out):
    """The sorted distinct fact ids of the mapped edges, -1 padded: a match's identity when distinct."""
    n_e = comp_edges.size
    for a in range(n_e):
        out[a] = chosen[comp_edges[a]]
    out[:n_e].sort()
    n_key = 0
    for a in range(n_e):
        if a == 0 or out[a] != out[a - 1]:
            out[n_key] = out[a]
            n_key += 1
    out[n_key:] = -1


@nb.njit(cache=True, inline="always")
def _before(cost, tie, major, minor, pos, top, it):
    """Does (cost, tie, major, minor, pos) rank before item `it` of the top k?"""
    c, t, seq = top[0][it], top[1][it], top[2]
    if cost != c:
        return cost < c
    if tie != t:
        return tie < t
    if major != seq[it, 0]:
        return major < seq[it, 0]
    if minor != seq[it, 1]:
        return minor < seq[it, 1]
    return pos < seq[it, 2]


@nb.njit(cache=True)
def _offer(cost, tie, major, minor, pos_, cur, comp_nodes, comp_edges, distinct, top_k, top, key):
    """Add a finished match to the top k, ranked by (cost, tie, major, minor): major numbers the leaf
    expansions in DFS order, minor (candidate rank, then more facts first) and pos the order within one,
    so the order is that of visiting every branch's children sorted; distinct: one match per fact set."""
    mapping, nterm, has_nterm, chosen, eterm, revs = cur
    top_cost, top_tie, top_seq, top_nodes, top_edges, top_nterm, top_eterm, top_rev, top_keys, state = top
    n_items = state[0]
    if n_items >= top_k and not _before(cost, tie, major, minor, pos_, top, n_items - 1):
        return
    _fact_set(chosen, comp_edges, key)
    if distinct:
        for it in range(n_items):
            if _same(top_keys[it], key):
                if not _before(cost, tie, major, minor, pos_, top, it):
                    return
                for b in range(it, n_items - 1):  # the better match replaces the old one
                    _copy_item(top, b + 1, b)
                n_items -= 1
                break
    pos = n_items
    while pos > 0 and _before(cost, tie, major, minor, pos_, top, pos - 1):
        pos -= 1
    for b in range(min(n_items, top_k - 1), pos, -1):
        _copy_item(top, b - 1, b)
    top_cost[pos], top_tie[pos] = cost, tie
    top_seq[pos, 0], top_seq[pos, 1], top_seq[pos, 2] = major, minor, pos_
    top_nodes[pos, :] = -1
    top_nterm[pos, :] = np.nan
    top_edges[pos, :] = -1
    for v in comp_nodes:
        top_nodes[pos, v] = mapping[v]
        if has_nterm[v]:
            top_nterm[pos, v] = nterm[v]
    for j in comp_edges:
        top_edges[pos, j], top_eterm[pos, j], top_rev[pos, j] = chosen[j], eterm[j], revs[j]
    top_keys[pos, :] = key
    state[0] = min(n_items + 1, top_k)


@nb.njit(cache=True, inline="always")
def _copy_item(top, a, b):
    top[3][b, :] = top[3][a, :]
    top[4][b, :] = top[4][a, :]
    top[5][b, :] = top[5][a, :]
    top[6][b, :] = top[6][a, :]
    top[7][b, :] = top[7][a, :]
    top[8][b, :] = top[8][a, :]
    top[2][b, :] = top[2][a, :]
    top[0][b], top[1][b] = top[0][a], top[1][a]


@nb.njit(cache=True)
def _take_child(c, depth, steps, has, cur, pool):
    """Step `depth` takes pool child c: its fact, relation term and direction; a tree step also maps
    the node it reaches (and that node's term, where the node has candidates)."""
    mapping, nterm, has_nterm, chosen, eterm, revs = cur
    j, w = steps[depth, 2], steps[depth, 1]
    chosen[j], eterm[j], revs[j] = pool[3][c], pool[1][c], pool[9][c] != 0
    if steps[depth, 3] == 1:
        mapping[w] = pool[5][c]
        if has[w]:
            nterm[w], has_nterm[w] = pool[2][c], True


@nb.njit(cache=True)
def _offer_leaves(depth, start, end, steps, has, cur, pool, comp_nodes, comp_edges, distinct, top_k, top, key):
    """Offer the last step's children in pool order, each ranked as if they came sorted (see _offer)."""
    c_cost, c_tie, c_rank = pool[0], pool[4], pool[6]
    top[9][1] += 1
    major = top[9][1]
    for c in range(start, end):
        t_cost, t_tie = _threshold(top, top_k)
        if c_cost[c] > t_cost or (c_cost[c] == t_cost and c_tie[c] > t_tie):
            continue
        _take_child(c, depth, steps, has, cur, pool)
        _offer(c_cost[c], c_tie[c], major, c_rank[c], c - start, cur, comp_nodes, comp_edges, distinct, top_k, top,
               key)


@nb.njit(cache=True)
def _enumerate(root, root_ids, root_dist, steps, lb_rest, inc, rel_dist, al_ptr, al_ids, edge_head, has, lk, cur,
               flags, comp_nodes, comp_edges, distinct, top_k, deadline, top, pool, counters):
    """Depth-first enumeration from each root candidate (nearest first) while its bound is admitted;
    counters = [nodes expanded, timed out]."""
    mapping, nterm, has_nterm, chosen = cur[:4]
    c_cost, c_tie, c_ord = pool[0], pool[4], pool[7]
    n_steps = steps.shape[0]
    d_end, d_cur = np.zeros(n_steps + 1, np.int64), np.zeros(n_steps + 1, np.int64)
    key = np.empty(top[8].shape[1], np.int64)  # a fact set, as the top k stores it
    for rc in range(root_ids.size):
        d = root_dist[rc]
        t_cost, t_tie = _threshold(top, top_k)
        if not _admits(d + lb_rest[0], 0, t_cost, t_tie):
            return  # root candidates come nearest first
        mapping[root], nterm[root], has_nterm[root] = root_ids[rc], d, True
        if n_steps == 0:
            top[9][1] += 1
            _offer(d, 0, top[9][1], 0, 0, cur, comp_nodes, comp_edges, distinct, top_k, top, key)
            continue
        depth, partial, tie = 0, d, 0
        d_cur[0] = -1
        while depth >= 0:
            if d_cur[depth] == -1:  # entering step `depth`: expand the node it starts from
                counters[0] += 1
                if (counters[0] & 63) == 1 and _now() > deadline:
                    counters[1] = 1
                    return
                start = d_end[depth - 1] if depth else 0
                t_cost, t_tie = _threshold(top, top_k)
                d_end[depth] = _expand(depth, partial, tie, steps, lb_rest, inc, rel_dist, al_ptr, al_ids, edge_head,
                                       has, lk, cur, flags, t_cost, t_tie, start, pool)
                d_cur[depth] = start
                if depth + 1 == n_steps:  # the last step: offer its children as they come, unsorted
                    _offer_leaves(depth, start, d_end[depth], steps, has, cur, pool, comp_nodes, comp_edges,
                                  distinct, top_k, top, key)
                    d_cur[depth] = d_end[depth]
            j, w, tree = steps[depth, 2], steps[depth, 1], steps[depth, 3] == 1
            if d_cur[depth] >= d_end[depth]:  # this step's children are done: undo it
                chosen[j] = -1
                if tree:
                    mapping[w], has_nterm[w] = -1, False
                depth -= 1
                continue
            c = c_ord[d_cur[depth]]
            d_cur[depth] += 1
            t_cost, t_tie = _threshold(top, top_k)
            if not _admits(c_cost[c] + lb_rest[depth + 1], c_tie[c], t_cost, t_tie):
                d_cur[depth] = d_end[depth]  # children come by (cost, tie): no later one is admitted
                continue
            _take_child(c, depth, steps, has, cur, pool)
            depth, partial, tie = depth + 1, c_cost[c], c_tie[c]
            d_cur[depth] = -1
        mapping[root], has_nterm[root] = -1, False


@nb.njit(cache=True)
def _new_top(top_k, n_v, n_e):
    return (np.empty(top_k), np.zeros(top_k, np.int64), np.zeros((top_k, 3), np.int64),
            np.full((top_k, n_v), -1, np.int64), np.full((top_k, n_e), -1, np.int64), np.full((top_k, n_v), np.nan),
            np.zeros((top_k, n_e)), np.zeros((top_k, n_e), np.bool_), np.full((top_k, max(n_e, 1)), -1, np.int64),
            np.zeros(2, np.int64))


@nb.njit(cache=True)
def _store(top, ci, top_k, out_f, out_i):
    """Copy component ci's top k into rows ci * top_k ... of the output arrays."""
    n_v, n_e = top[3].shape[1], top[4].shape[1]
    for it in range(top[9][0]):
        row = ci * top_k + it
        out_f[row, 0], out_i[row, 0] = top[0][it], top[1][it]
        out_f[row, 1:1 + n_v], out_f[row, 1 + n_v:] = top[5][it], top[6][it]
        out_i[row, 1:1 + n_v], out_i[row, 1 + n_v:1 + n_v + n_e] = top[3][it], top[4][it]
        for j in range(n_e):
            out_i[row, 1 + n_v + n_e + j] = 1 if top[7][it, j] else 0


#: search_pattern's `meta` output: [nodes expanded, timed out, error, components, nanoseconds in the
#: depth-first enumeration], then 5 numbers per component (matches found, first step row, steps, searched,
#: root), then 4 per step (u, w, edge, tree)
META_HEAD = 5

#: the child pool's columns: float64 (cost, relation term, node term) and int64 (fact, tie, neighbour,
#: rank, order, merge scratch, reversed); search_pattern takes them as two flat arrays of capacity rows each
POOL_F, POOL_I = 3, 7


@nb.njit(cache=True)
def search_pattern(inc, rel_dist, pat, cand_ids, cand_dist, time_limit, out_f, out_i, meta, pool_f, pool_i):
    """The top-k matches of every component of one pattern (see the module docstring).

    pat = [n_v, n_e, top_k, injective, same_dir, distinct, dense_scan, edge heads (n_e), edge tails (n_e),
    known (n_v), has candidates (n_v), candidate offsets (n_v + 1)]; pool_f / pool_i: the child pool
    (POOL_F / POOL_I columns of n_e * max degree rows, reused between calls); component ci's
    matches are rows ci * top_k ... of out_f ([GSD, node terms (NaN: none), edge terms]) and out_i ([tie,
    entity per node (-1: none), fact per edge, reversed per edge]); `meta` as META_HEAD says (error
    ERR_NO_ANCHOR: a component without candidates for any node; nothing is searched then).
    """
    deadline = _now() + time_limit  # time_limit: CPU seconds of this thread from here (inf: none)
    meta[:] = 0
    n_v, n_e, top_k, injective, same_dir, distinct, dense_scan = pat[:7]
    heads, tails = pat[7:7 + n_e], pat[7 + n_e:7 + 2 * n_e]
    known, has = pat[7 + 2 * n_e:7 + 2 * n_e + n_v] == 1, pat[7 + 2 * n_e + n_v:7 + 2 * n_e + 2 * n_v] == 1
    cand_ptr = pat[7 + 2 * n_e + 2 * n_v:7 + 2 * n_e + 3 * n_v + 1]
    comp_info = meta[META_HEAD:META_HEAD + 5 * n_v].reshape(n_v, 5)
    out_steps = meta[META_HEAD + 5 * n_v:META_HEAD + 5 * n_v + 4 * n_e].reshape(n_e, 4)
    comp, n_comp = _components(n_v, heads, tails)
    meta[3] = n_comp
    anchored = np.zeros(n_comp, np.bool_)
    for v in range(n_v):
        anchored[comp[v]] |= has[v]
    if not np.all(anchored):
        meta[2] = ERR_NO_ANCHOR
        return
    deg = np.zeros(n_v, np.int64)
    for j in range(n_e):
        deg[heads[j]] += 1
        deg[tails[j]] += 1
    lk_ids, lk_dist, lk_rank, node_min = _lookups(has, cand_ptr, cand_ids, cand_dist)
    lk = (cand_ptr, lk_ids, lk_dist, lk_rank)
    al_ptr, al_ids, rel_min = _allowed_relations(rel_dist)
    cap = pool_f.size // POOL_F
    pool = (pool_f[:cap], pool_f[cap:2 * cap], pool_f[2 * cap:3 * cap], pool_i[:cap], pool_i[cap:2 * cap],
            pool_i[2 * cap:3 * cap], pool_i[3 * cap:4 * cap], pool_i[4 * cap:5 * cap], pool_i[5 * cap:6 * cap],
            pool_i[6 * cap:7 * cap])
    cur = (np.full(n_v, -1, np.int64), np.zeros(n_v), np.zeros(n_v, np.bool_), np.full(n_e, -1, np.int64),
           np.zeros(n_e), np.zeros(n_e, np.bool_))
    count = np.diff(cand_ptr)
    row = 0
    for ci in range(n_comp):
        root, steps = _order(comp, ci, heads, tails, deg, known, has, count)
        lb_rest = _bounds(steps, rel_min, node_min, has)
        n_s = steps.shape[0]
        out_steps[row:row + n_s] = steps
        comp_info[ci, 1], comp_info[ci, 2], comp_info[ci, 3], comp_info[ci, 4] = row, n_s, 1, root
        row += n_s
        comp_nodes = np.empty(1 + np.sum(steps[:, 3]), np.int64)
        comp_nodes[0], k = root, 1
        for i in range(n_s):
            if steps[i, 3] == 1:
                comp_nodes[k] = steps[i, 1]
                k += 1
        flags = (injective == 1, same_dir == 1, 2 * n_s + 1, dense_scan)  # one reversal outweighs all repeats
        a, b = cand_ptr[root], cand_ptr[root + 1]
        comp_edges = steps[:, 2].copy()
        t_start = _wall()  # the DFS clock (wall, as the reference's): the empty top k, the DFS from every root
        top = _new_top(top_k, n_v, n_e)
        _enumerate(root, cand_ids[a:b], cand_dist[a:b], steps, lb_rest, inc, rel_dist, al_ptr, al_ids, heads, has,
                   lk, cur, flags, comp_nodes, comp_edges, distinct == 1, top_k, deadline, top, pool, meta)
        elapsed = _wall() - t_start
        if elapsed == elapsed and elapsed < np.inf:  # (NaN where the loop has no clock)
            meta[4] += int(elapsed * 1e9)
        comp_info[ci, 0] = top[9][0]
        _store(top, ci, top_k, out_f, out_i)
        if meta[1]:
            break
