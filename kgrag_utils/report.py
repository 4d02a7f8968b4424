"""The reproduction report's tables, read from run records only (nothing is recomputed).

Every method writes its own summary shape; one small *adapter* per method turns a run record into
long-form score rows that all share the same columns, so runs of different methods can be put side
by side:

    method, variant, dataset, split, n, llm, metric, definition, value,
    prompt_tokens_per_q, seconds_per_q, run_name, group

`group` joins the shards of one job (`...-shard0of2`, `...-shard1of2`); `combine_shards` averages
them weighted by their question counts (every metric here is a mean over questions, so this is
exact). Costs come from the per-example records where they exist; a cached LLM call costs about
nothing, so seconds per question are those of the run as recorded (`cached_share` says how much was
served from the cache).
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping

from . import settings
from .records import EXAMPLES_FILE, RUN_FILE

__all__ = ["COLUMNS", "ADAPTERS", "read_records", "score_rows", "combine_shards", "runs_table", "failures_table",
           "stage_errors", "published_rows", "best_per_cell", "latest_largest", "cost_figure", "stage_error_figure", "side_by_side",
           "PAPER_METRICS"]

COLUMNS = ["method", "variant", "dataset", "split", "n", "llm", "metric", "definition", "value",
           "prompt_tokens_per_q", "seconds_per_q", "cached_share", "run_name", "group", "updated"]

STRICT = "strict: the first predicted answer equals a gold answer (normalised)"
LENIENT = "lenient: a gold answer appears in the output (what several papers call Hits@1)"
RECALL = "passage recall@{k}: share of gold passages among the first {k} retrieved"
EM_DEF = "exact match of the reader's answer (SQuAD normalisation)"
F1_DEF = "token F1 of the reader's answer (SQuAD)"

_SHARD = re.compile(r"-shard\d+of\d+$")


# ----------------------------------------------------------------------------- reading
def read_records(root: Path | str | None = None, with_examples: bool = True) -> list[dict]:
    """Every run record under the results folder (sorted by name); `examples` holds the per-example rows."""
    root = Path(root) if root is not None else settings.results_dir()
    out = []
    if not root.is_dir():
        return out
    for run_file in sorted(root.glob(f"*/{RUN_FILE}")):
        try:
            rec = json.loads(run_file.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError) as err:
            out.append({"run_name": run_file.parent.name, "method": "?", "status": "unreadable",
                        "error": f"{type(err).__name__}: {err}", "params": {}, "summary": None})
            continue
        rec.setdefault("run_name", run_file.parent.name)
        rec["examples"] = _examples(run_file.parent / EXAMPLES_FILE) if with_examples else []
        out.append(rec)
    return out


def _examples(path: Path) -> list[dict]:
    rows = []
    if path.exists():
        for line in path.read_text(encoding="utf-8").splitlines():
            line = line.strip()
            if line:
                try:
                    rows.append(json.loads(line))
                except json.JSONDecodeError:  # a line cut by a crash; the record says how many finished
                    continue
    return rows


# ----------------------------------------------------------------------------- helpers
def _num(x: Any) -> float | None:
    if isinstance(x, bool) or x is None:
        return None
    if isinstance(x, (int, float)) and not math.isnan(float(x)):
        return float(x)
    return None


def _mean(values: Iterable[Any]) -> float | None:
    vals = [v for v in (_num(x) for x in values) if v is not None]
    return sum(vals) / len(vals) if vals else None


def _llm_label(params: Mapping, rec: Mapping) -> str:
    """The LLM preset (same weights whichever backend decoded them, so runs compare on it)."""
    llm = rec.get("llm") if isinstance(rec.get("llm"), Mapping) else {}
    return str(llm.get("preset") or params.get("llm_preset") or "")


def _base(rec: Mapping, n: Any, variant: str = "", uses_llm: bool = True) -> dict:
    params = rec.get("params") or {}
    return {"method": rec.get("method", "?"), "variant": variant, "dataset": params.get("dataset", "?"),
            "split": params.get("split", ""), "n": int(n) if _num(n) is not None else len(rec.get("examples") or []),
            "llm": _llm_label(params, rec) if uses_llm else "none", "run_name": rec.get("run_name", ""),
            "updated": str(rec.get("updated") or ""),
            "group": _SHARD.sub("", str(rec.get("run_name", "")))}


def _row(base: Mapping, metric: str, definition: str, value: Any, tokens: Any = None, seconds: Any = None,
         cached: Any = None) -> dict | None:
    v = _num(value)
    if v is None:
        return None
    return {**base, "metric": metric, "definition": definition, "value": v, "prompt_tokens_per_q": _num(tokens),
            "seconds_per_q": _num(seconds), "cached_share": _num(cached)}


def _sum_keys(d: Mapping | None, keys: Iterable[str]) -> float | None:
    if not isinstance(d, Mapping):
        return None
    vals = [_num(d.get(k)) for k in keys]
    vals = [v for v in vals if v is not None]
    return sum(vals) if vals else None


# ----------------------------------------------------------------------------- adapters
def _quickstart(rec: Mapping) -> list[dict]:
    s, ex = rec.get("summary") or {}, rec.get("examples") or []
    base = _base(rec, s.get("n", len(ex)), "oracle-chain reader")
    tok = _mean(e.get("prompt_tokens") for e in ex)
    sec = _mean(e.get("seconds") for e in ex)
    cached = _mean(float(bool(e.get("cached"))) for e in ex) if ex else None
    return [_row(base, "hits@1", STRICT, s.get("hits@1"), tok, sec, cached),
            _row(base, "containment", LENIENT, s.get("containment"), tok, sec, cached)]


def _simgrag(rec: Mapping) -> list[dict]:
    s, ex = rec.get("summary") or {}, rec.get("examples") or []
    params = rec.get("params") or {}
    allq = s.get("all") or {}
    base = _base(rec, allq.get("n", s.get("n")), f"pattern={params.get('pattern_source', '?')}")
    tok = _mean(_sum_keys(e.get("tokens"), ("pattern_prompt", "answer_prompt")) for e in ex)
    sec = _mean(_sum_keys(e.get("timings"), ("pattern_s", "answer_s")) for e in ex)
    cached = _mean(_mean(float(bool((e.get("tokens") or {}).get(k))) for k in ("pattern_cached", "answer_cached"))
                   for e in ex) if ex else None
    rows = [_row(base, "hits@1", STRICT, allq.get("hits@1"), tok, sec, cached),
            _row(base, "containment", LENIENT, allq.get("containment"), tok, sec, cached)]
    ans = s.get("answerable") or {}
    if ans:
        b = {**base, "variant": base["variant"] + ", answerable", "n": int(ans.get("n", 0))}
        rows += [_row(b, "hits@1", STRICT, ans.get("hits@1"), tok, sec, cached),
                 _row(b, "containment", LENIENT, ans.get("containment"), tok, sec, cached)]
    return rows


def _compact(rec: Mapping) -> list[dict]:
    s, ex = rec.get("summary") or {}, rec.get("examples") or []
    rows = []
    n = s.get("n", len(ex))
    rows.append(_row(_base(rec, n, "derived (no LLM)", uses_llm=False), "hits@1", STRICT + " (answer derived by rules)",
                     s.get("derived_hits@1"), 0, _mean(e.get("seconds_derive") for e in ex)))
    for ctx in ("compact", "topk"):
        llm = s.get(f"llm_{ctx}")
        if not isinstance(llm, Mapping):
            continue
        base = _base(rec, n, f"LLM reads {ctx} facts")
        tok = _mean(e.get(f"prompt_tokens_{ctx}") for e in ex)
        if tok is None and isinstance(s.get(f"prompt_tokens_{ctx}"), Mapping):
            tok = s[f"prompt_tokens_{ctx}"].get("mean")
        sec = _mean(e.get(f"seconds_{ctx}") for e in ex)
        if sec is None:  # one run reads both contexts: split the LLM time by prompt tokens
            gen = _num((rec.get("tokens") or {}).get("generate_seconds"))
            tot = _mean(_sum_keys(e, ("prompt_tokens_compact", "prompt_tokens_topk")) for e in ex)
            sec = gen / max(int(n), 1) * (tok / tot) if gen is not None and tok and tot else None
        cached = _mean(float(bool(e.get(f"cached_{ctx}"))) for e in ex) if ex else None
        rows += [_row(base, "hits@1", STRICT, llm.get("hits@1"), tok, sec, cached),
                 _row(base, "containment", LENIENT, llm.get("containment"), tok, sec, cached)]
    return rows


def _vector_rerank(rec: Mapping) -> list[dict]:
    """Passage runs: recall rows per variant. KG question runs (answers from the reranked facts): strict
    hits@1 and lenient containment for rerank, and every variant's fact hit. Each row carries the mean
    prompt tokens per question (all LLM calls: entities, rerank and the answer call; 0 without an LLM)
    and the mean seconds per question of that variant's stages."""
    s, ex = rec.get("summary") or {}, rec.get("examples") or []
    rows = []
    variants = s.get("variants") or {}
    tok_all = _mean(_num((e.get("tokens") or {}).get("prompt")) for e in ex)
    fact_hit_def = "fact-level: a returned fact has a gold answer as head or tail (retrieval only, no answer)"
    for name, v in variants.items():
        if not isinstance(v, Mapping):
            continue
        uses_llm = name.startswith("rerank")
        base = _base(rec, v.get("n", s.get("n")), name, uses_llm=uses_llm)
        sec = _mean(_variant_seconds(e.get("timings"), name) for e in ex)
        tok = tok_all if uses_llm else 0
        for metric in ("recall@2", "recall@5"):
            k = metric.split("@")[1]
            rows.append(_row(base, metric, RECALL.format(k=k), v.get(metric), tok, sec))
        for metric, definition in (("em", EM_DEF), ("f1", F1_DEF), ("hits@1", STRICT), ("containment", LENIENT),
                                   ("fact_hit", fact_hit_def)):
            rows.append(_row(base, metric, definition, v.get(metric), tok, sec))
        sub = v.get("answerable")  # KG questions: the same scores on the answerable questions (as SimGRAG reports)
        if isinstance(sub, Mapping):
            base_a = _base(rec, sub.get("n"), f"{name}, answerable", uses_llm=uses_llm)
            for metric, definition in (("hits@1", STRICT), ("containment", LENIENT), ("fact_hit", fact_hit_def)):
                rows.append(_row(base_a, metric, definition, sub.get(metric), tok, sec))
    return rows


def _variant_seconds(timings: Mapping | None, variant: str) -> float | None:
    """Seconds one vector-rerank variant spent: its own stages (`rerank_*` for every rerank-*),
    the query embedding, and the LLM entity step for the rerank variants."""
    if not isinstance(timings, Mapping):
        return None
    stem = variant.split("-")[0]
    keys = [k for k in timings if k == stem or k.startswith(stem + "_") or k == "embed"
            or (stem == "rerank" and k == "entities_llm")]
    return _sum_keys(timings, keys)


def _kgp(rec: Mapping) -> list[dict]:
    s, ex = rec.get("summary") or {}, rec.get("examples") or []
    params = rec.get("params") or {}
    uses_llm = params.get("traversal") == "llm" or bool(params.get("reader"))
    base = _base(rec, s.get("n", len(ex)), f"traversal={params.get('traversal', '?')}, graph={params.get('graph', '?')}",
                 uses_llm=uses_llm)
    tok = _mean(_sum_keys(e.get("tokens"), ("agent_prompt", "reader_prompt")) for e in ex)
    sec = _mean(_sum_keys(e.get("timings"), ("set_seconds", "graph_seconds", "traversal_seconds", "reader_seconds"))
                for e in ex)
    rows = []
    for k in (5, 30):
        rows.append(_row(base, f"recall@{k}", RECALL.format(k=k), s.get(f"recall@{k}"), tok, sec))
    rows += [_row(base, "em", EM_DEF, s.get("em"), tok, sec), _row(base, "f1", F1_DEF, s.get("f1"), tok, sec),
             _row(base, "containment", LENIENT, s.get("containment"), tok, sec)]
    return rows


#: method name (as RunRecorder records it) -> adapter
ADAPTERS: dict[str, Callable[[Mapping], list[dict]]] = {
    "quickstart": _quickstart, "simgrag": _simgrag, "compact": _compact,
    "vector_rerank": _vector_rerank, "kgp": _kgp,
}


# ----------------------------------------------------------------------------- tables
def score_rows(records: Iterable[Mapping], statuses: Iterable[str] = ("ok",)):
    """Long-form scores of every finished run a known adapter can read (a DataFrame with COLUMNS)."""
    import pandas as pd

    keep = set(statuses)
    rows = []
    for rec in records:
        adapter = ADAPTERS.get(str(rec.get("method")))
        if adapter is None or rec.get("status") not in keep:
            continue
        rows += [r for r in adapter(rec) if r is not None]
    return pd.DataFrame(rows, columns=COLUMNS)


def combine_shards(scores):
    """One row per (group, variant, metric): shards merged, means weighted by their question counts."""
    import pandas as pd

    if scores.empty:
        return scores
    keys = ["method", "variant", "dataset", "split", "llm", "metric", "definition", "group"]  # not run_name/updated
    out = []
    for key, g in scores.groupby(keys, dropna=False, sort=False):
        w = g["n"].astype(float)
        row = dict(zip(keys, key))
        row["n"] = int(w.sum())
        for col in ("value", "prompt_tokens_per_q", "seconds_per_q", "cached_share"):
            ok = g[col].notna()
            row[col] = float((g.loc[ok, col] * w[ok]).sum() / w[ok].sum()) if ok.any() and w[ok].sum() > 0 else None
        row["run_name"] = ", ".join(g["run_name"]) if len(g) > 1 else g["run_name"].iloc[0]
        row["updated"] = max(g["updated"])
        out.append(row)
    return pd.DataFrame(out, columns=COLUMNS)


def runs_table(records: Iterable[Mapping]):
    """One line per run: method, dataset, status, examples finished, last update, LLM."""
    import pandas as pd

    rows = []
    for rec in records:
        params = rec.get("params") or {}
        rows.append({"run_name": rec.get("run_name"), "method": rec.get("method"), "dataset": params.get("dataset"),
                     "status": rec.get("status"), "n_examples": rec.get("n_examples", len(rec.get("examples") or [])),
                     "limit": params.get("limit"), "llm": _llm_label(params, rec), "updated": rec.get("updated"),
                     "readable": str(rec.get("method")) in ADAPTERS})
    return pd.DataFrame(rows)


def failures_table(records: Iterable[Mapping]):
    """Runs that did not finish, with why: failed (the error), still running / killed, unreadable."""
    import pandas as pd

    rows = []
    for rec in records:
        status = rec.get("status")
        if status == "ok":
            continue
        why = rec.get("error") or ("never finished: still running, or killed before rec.finish() (resumable)"
                                   if status == "running" else "")
        rows.append({"run_name": rec.get("run_name"), "method": rec.get("method"), "status": status,
                     "n_examples": rec.get("n_examples", len(rec.get("examples") or [])), "why": why})
    return pd.DataFrame(rows, columns=["run_name", "method", "status", "n_examples", "why"])


def stage_errors(records: Iterable[Mapping]):
    """Share of questions lost at each stage, per run, where the method attributes its errors."""
    import pandas as pd

    rows = []
    for rec in records:
        if rec.get("status") != "ok":
            continue
        s, ex, method = rec.get("summary") or {}, rec.get("examples") or [], rec.get("method")
        params = rec.get("params") or {}
        n = len(ex) or int(_num(s.get("n")) or 0)
        counts: dict[str, float] = {}
        if method == "simgrag" and isinstance(s.get("failed_stage"), Mapping):
            counts = {k: float(v) for k, v in s["failed_stage"].items()}
        elif method == "compact" and ex:
            counts = {"chain (relation knowledge)": sum(1 for e in ex if e.get("chain_correct") is False),
                      "not derivable": sum(1 for e in ex if e.get("derivable") is False),
                      "LLM reading compact facts": sum(1 for e in ex if e.get("hits@1_compact") == 0.0
                                                       and e.get("compact_has_gold"))}
        elif method == "kgp" and ex:
            counts = {"retrieval (no gold passage in budget)": sum(1 for e in ex if _num(e.get("recall@30")) == 0.0)}
            if params.get("reader"):
                counts["reader (all gold retrieved, F1 = 0)"] = sum(
                    1 for e in ex if _num(e.get("recall@30")) == 1.0 and _num(e.get("f1")) == 0.0)
        elif method == "vector_rerank" and ex:
            fails = sum(1 for e in ex if ((e.get("variants") or {}).get("rerank") or {}).get("failed"))
            if any("rerank" in (e.get("variants") or {}) for e in ex):
                counts = {"failed: rerank reply (or, on KG questions, the answer) unusable": fails}
        for stage, c in counts.items():
            rows.append({"method": method, "dataset": params.get("dataset"), "group": _SHARD.sub("", str(rec.get("run_name"))),
                         "stage": stage, "n": n, "count": c})
    df = pd.DataFrame(rows, columns=["method", "dataset", "group", "stage", "n", "count"])
    if not df.empty:  # shards of one job add up
        df = df.groupby(["method", "dataset", "group", "stage"], sort=False, as_index=False)[["n", "count"]].sum()
    df["share"] = df["count"] / df["n"].clip(lower=1) if not df.empty else []
    return df


def best_per_cell(scores, metric: str):
    """For the cross-method comparison: per (method, variant, dataset, llm) the row of the largest run."""
    if scores.empty:
        return scores
    sub = scores[scores["metric"] == metric]
    return latest_largest(sub, ["method", "variant", "dataset", "llm"])


def latest_largest(scores, keys):
    """Per key, the row of the largest run, the most recent among equals (ablation runs share a key)."""
    return scores.sort_values(["n", "updated"], ascending=False).drop_duplicates(keys)


# ----------------------------------------------------------------------------- published numbers
def published_rows():
    """The papers' published numbers, from each method package's own table, labelled as published.

    The report may import the method packages (it sits above them); the methods never import it.
    """
    import pandas as pd

    rows = []
    from .methods.simgrag import report as sg

    for system, cells in sg.PAPER.items():
        for ds, v in cells.items():
            rows.append({"method": "simgrag", "system": system, "dataset": ds, "metric": "hits@1 (lenient)",
                         "value": v / 100, "source": sg.PAPER_NOTE})
    from .methods.compact import pipeline as cp

    for key, cells in cp.PAPER.items():
        if isinstance(cells, Mapping):
            for ds, v in cells.items():
                if isinstance(v, (int, float)):  # percentages become fractions; facts per context is a count
                    rows.append({"method": "compact", "system": "compact relations (paper)", "dataset": ds,
                                 "metric": key, "value": v if key == "facts_per_context" else v / 100,
                                 "source": cp.PAPER.get("note", "published")})
    from .methods.vector_rerank import config as vr

    for ds, cells in vr.PUBLISHED_RECALL5.items():
        for system, v in cells.items():
            rows.append({"method": "vector_rerank", "system": system, "dataset": ds, "metric": "recall@5",
                         "value": v / 100, "source": "published (gpt-5-mini rerank, bge-large embeddings)"})
    from .methods.kgp import published as kp

    for system, cells in kp.TABLE1_F1.items():
        for ds, v in cells.items():
            rows.append({"method": "kgp", "system": system, "dataset": ds, "metric": "f1", "value": v / 100,
                         "source": kp.PAPER_SETUP})
    return pd.DataFrame(rows, columns=["method", "system", "dataset", "metric", "value", "source"])


# ----------------------------------------------------------------------------- figures
_METHOD_COLORS = {"simgrag": "#1b9e77", "compact": "#d95f02", "vector_rerank": "#7570b3", "kgp": "#e7298a",
                  "quickstart": "#666666"}


def cost_figure(scores, metrics: Iterable[str] = ("hits@1", "f1", "recall@5")):
    """Accuracy against prompt tokens and against seconds per question, one point per run and variant.

    Colour = method, marker = metric; the label names the variant and dataset, moved apart by
    `plotting.place_labels` (adjustText) so that no two labels overlap, a thin line joining a moved label
    to its point. Log x axes, because a no-LLM retriever and an LLM agent differ by orders of magnitude.
    The legend sits to the right of the plots, outside both axes.
    """
    import matplotlib.pyplot as plt
    from matplotlib.lines import Line2D

    from .plotting import place_labels

    metrics = list(metrics)
    markers = dict(zip(metrics, "os^Dv"))
    fig, axes = plt.subplots(1, 2, figsize=(14, 6), sharey=True)
    sub = scores[scores["metric"].isin(metrics)] if not scores.empty else scores
    placed = []
    for ax, col, label in ((axes[0], "prompt_tokens_per_q", "prompt tokens per question (log; 0 plotted at 1)"),
                           (axes[1], "seconds_per_q", "seconds per question as recorded (log)")):
        xs, ys, texts = [], [], []
        for _, r in sub.iterrows():
            x = r[col]
            if x is None or x != x:
                continue
            x = max(float(x), 1.0) if col == "prompt_tokens_per_q" else max(float(x), 1e-3)
            ax.scatter(x, r["value"], color=_METHOD_COLORS.get(r["method"], "#333333"),
                       marker=markers.get(r["metric"], "o"), s=46, alpha=0.85, edgecolor="white", linewidth=0.5, zorder=3)
            xs.append(x)
            ys.append(float(r["value"]))
            texts.append(ax.text(x, r["value"], f"{r['variant']} | {r['dataset']}", fontsize=6.5, alpha=0.9, zorder=4))
        ax.set_xscale("log")
        ax.set_xlabel(label)
        ax.set_ylim(-0.05, 1.1)
        if xs:  # room on both sides of the points for their labels (log axes: a factor, not an offset)
            ax.set_xlim(min(xs) / 4, max(xs) * 4)
        placed.append((ax, texts, xs, ys))
    axes[0].set_ylabel("score (see legend for the metric)")
    handles = [Line2D([], [], color=c, marker="o", linestyle="", label=m) for m, c in _METHOD_COLORS.items()
               if not sub.empty and m in set(sub["method"])]
    handles += [Line2D([], [], color="#333333", marker=mk, linestyle="", label=m) for m, mk in markers.items()
                if not sub.empty and m in set(sub["metric"])]
    if handles:
        axes[1].legend(handles=handles, fontsize=8, loc="upper left", bbox_to_anchor=(1.02, 1.0), frameon=True)
    fig.suptitle("Accuracy against cost (same CPU, as recorded)")
    fig.tight_layout()
    fig.canvas.draw()
    for ax, texts, xs, ys in placed:  # after the layout is final: adjustText works in display coordinates
        place_labels(ax, texts, xs, ys)
    return fig


def stage_error_figure(stages):
    """Share of questions lost at each stage, one bar group per run group."""
    import matplotlib.pyplot as plt

    if stages.empty:
        fig, ax = plt.subplots(figsize=(6, 1.5))
        ax.text(0.5, 0.5, "no run attributes its errors yet", ha="center", va="center")
        ax.axis("off")
        return fig
    table = stages.pivot_table(index=["method", "dataset"], columns="stage", values="share", aggfunc="mean")
    fig, ax = plt.subplots(figsize=(10, 0.45 * len(table) + 1.6))
    table.plot.barh(stacked=True, ax=ax, width=0.75, colormap="tab20")
    ax.set_xlabel("share of questions lost at the stage")
    ax.set_ylabel("")
    ax.set_xlim(0, 1)
    ax.legend(fontsize=7, loc="center left", bbox_to_anchor=(1.0, 0.5))
    fig.tight_layout()
    return fig


# ----------------------------------------------------------------------------- paper beside ours
#: which of our metrics sit beside each paper's published metric
PAPER_METRICS = {"simgrag": ("hits@1", "containment"), "compact": ("hits@1", "containment"),
                 "vector_rerank": ("recall@5",), "kgp": ("f1", "em", "recall@5")}


def side_by_side(scores, published, method: str):
    """One table per method: rows = datasets; our columns say variant, metric, n and LLM; the paper's
    columns say 'published: <system>'. Cells are fractions in [0, 1]; empty where one side has no number."""
    import pandas as pd

    ours = scores[scores["method"] == method]
    ours = ours[ours["metric"].isin(PAPER_METRICS.get(method, ()))]
    if not ours.empty:
        ours = latest_largest(ours, ["variant", "dataset", "llm", "metric"])
        ours = ours.assign(column=[f"ours: {v} | {m} | {llm} | n={n}" for v, m, llm, n in
                                   zip(ours["variant"], ours["metric"], ours["llm"], ours["n"])])
        left = ours.pivot_table(index="dataset", columns="column", values="value", aggfunc="first")
    else:
        left = pd.DataFrame()
    pub = published[published["method"] == method]
    if not pub.empty:
        pub = pub.assign(column=[f"published: {s} | {m}" for s, m in zip(pub["system"], pub["metric"])])
        right = pub.pivot_table(index="dataset", columns="column", values="value", aggfunc="first")
    else:
        right = pd.DataFrame()
    table = left.join(right, how="outer") if not left.empty else right
    table.index.name = f"{method} (fractions; n and LLM in each column's name)"
    return table
