"""The reproduction report's tables, read from run records only (nothing is recomputed).

Every run stores its score rows in its summary when it finishes (`kgrag_utils.methods.summary`);
the report reads those rows, adds the run's own fields, and calls no method's code. The rows of
every method share the same columns, so runs of different methods can be put side by side:

    method, variant, dataset, split, n, llm, metric, definition, value,
    prompt_tokens_per_q, seconds_per_q, cached_share, run_name, group, updated

This module iterates the registry and knows no method by name. `group` joins the shards of one job
(`...-shard0of2`, `...-shard1of2`); `combine_shards` averages them weighted by their question counts
(every metric here is a mean over questions, so this is exact). Costs come from the summaries; a
cached LLM call costs about nothing, so seconds per question are those of the run as recorded
(`cached_share` says how much was served from the cache). A finished run whose summary holds no score
rows (written before release 0.2.0) is listed among the failures, with the fix.
"""

from __future__ import annotations

from pathlib import Path
from typing import Iterable, Mapping

from . import settings
from .errors import KgragError
from .methods.registry import entries, methods
from .methods.scoring import SCORE_COLUMNS, group_of, run_fields
from .methods.summary import score_rows as stored_rows
from .records import EXAMPLES_FILE, RUN_FILE, read_examples, read_run

__all__ = ["COLUMNS", "read_records", "score_rows", "combine_shards", "runs_table", "failures_table",
           "stage_errors", "published_rows", "best_per_cell", "latest_largest", "cost_figure", "stage_error_figure",
           "side_by_side", "paper_metrics", "cross_table", "dataset_kind"]

COLUMNS = SCORE_COLUMNS

#: why a finished run has no score rows
UNSCORED = ("its summary holds no score rows (written before release 0.2.0): `kgrag rescore` gives it its rows from "
            "its own records")


# ----------------------------------------------------------------------------- reading
def read_records(root: Path | str | None = None, with_examples: bool = True) -> list[dict]:
    """Every run record under the results folder (sorted by name), read with `records.read_run`;
    `examples` holds the per-example rows (`records.read_examples`). A record that cannot be read is
    a row with status "unreadable" and the error."""
    root = Path(root) if root is not None else settings.results_dir()
    out = []
    if not root.is_dir():
        return out
    for run_file in sorted(root.glob(f"*/{RUN_FILE}")):
        try:
            rec = read_run(run_file.parent)
        except (KgragError, OSError) as err:
            out.append({"run_name": run_file.parent.name, "method": "?", "status": "unreadable",
                        "error": f"{type(err).__name__}: {err}", "params": {}, "summary": None})
            continue
        rec.setdefault("run_name", run_file.parent.name)
        examples = run_file.parent / EXAMPLES_FILE
        rec["examples"] = read_examples(examples)[0] if with_examples and examples.exists() else []
        out.append(rec)
    return out


def _scored(rec: Mapping) -> bool:
    """A finished run whose summary holds its score rows."""
    return rec.get("status") == "ok" and bool((rec.get("summary") or {}).get("rows"))


def _unscored(rec: Mapping) -> bool:
    """A finished run of a registered method whose summary holds no score rows."""
    spec = entries().get(str(rec.get("method")))
    return rec.get("status") == "ok" and spec is not None and spec.kind != "report" and not _scored(rec)


# ----------------------------------------------------------------------------- tables
def score_rows(records: Iterable[Mapping], statuses: Iterable[str] = ("ok",)):
    """Long-form scores of every finished run, the rows its summary stores (a DataFrame with COLUMNS)."""
    import pandas as pd

    keep = set(statuses)
    rows = []
    for rec in records:
        if rec.get("status") in keep:
            rows += stored_rows(rec.get("summary"), run=rec)
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
                     "limit": params.get("limit"), "llm": run_fields(rec)["llm"], "updated": rec.get("updated"),
                     "readable": _scored(rec)})
    return pd.DataFrame(rows)


def failures_table(records: Iterable[Mapping]):
    """Runs that did not finish, with why: failed (the error), still running / killed, unreadable; and
    finished runs without score rows (status "unscored")."""
    import pandas as pd

    rows = []
    for rec in records:
        status = rec.get("status")
        if status == "ok" and not _unscored(rec):
            continue
        if status == "ok":
            status, why = "unscored", UNSCORED
        else:
            why = rec.get("error") or ("never finished: still running, or killed before rec.finish() (resumable)"
                                       if status in ("running", "interrupted") else "")
        rows.append({"run_name": rec.get("run_name"), "method": rec.get("method"), "status": status,
                     "n_examples": rec.get("n_examples", len(rec.get("examples") or [])), "why": why})
    return pd.DataFrame(rows, columns=["run_name", "method", "status", "n_examples", "why"])


def stage_errors(records: Iterable[Mapping]):
    """Share of questions lost at each stage, per run, as its summary stores them (`stage_errors`: where
    the method attributes its errors, and "raised an error"); shards of one job add up."""
    import pandas as pd

    rows = []
    for rec in records:
        if not _scored(rec):
            continue
        s = rec.get("summary") or {}
        n = int(s.get("n") or 0)
        dataset = (rec.get("params") or {}).get("dataset")
        for stage, count in (s.get("stage_errors") or {}).items():
            rows.append({"method": str(rec.get("method")), "dataset": dataset, "group": group_of(str(rec.get("run_name"))),
                         "stage": stage, "n": n, "count": float(count)})
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
    """The papers' published numbers, from each method's `published.rows()`, labelled as published.

    The report may import the method packages (it sits above them); the methods never import it.
    """
    import pandas as pd

    rows = [row for spec in methods("method") for row in spec.published.rows()]
    return pd.DataFrame(rows, columns=["method", "system", "dataset", "metric", "value", "source"])


def paper_metrics() -> dict[str, tuple[str, ...]]:
    """method -> our metrics that sit beside its paper's published metric (each method's `published.OUR_METRICS`)."""
    return {spec.name: tuple(spec.published.OUR_METRICS) for spec in methods("method")}


def dataset_kind(name: str) -> str:
    """"kgqa", "kinship" or "passages" (the dataset registry's kind; "?" for a name it does not know)."""
    from .datasets.registry import get_spec

    try:
        return get_spec(str(name)).kind
    except Exception:  # noqa: BLE001 - a record may name a dataset this checkout does not register
        return "?"


def cross_table(scores, metric: str, kind: str):
    """Methods side by side on the datasets of one kind ("kg": KG questions and kinship, else passages):
    rows = (dataset, llm), columns = (method, variant), the largest run of each cell."""
    sub = best_per_cell(scores, metric)
    if sub.empty:
        return sub
    kg_like = sub["dataset"].map(lambda d: dataset_kind(d) in ("kgqa", "kinship"))
    sub = sub[kg_like] if kind == "kg" else sub[~kg_like]
    return sub.pivot_table(index=["dataset", "llm"], columns=["method", "variant"], values="value", aggfunc="first")


# ----------------------------------------------------------------------------- figures
def cost_figure(scores, metrics: Iterable[str] = ("hits@1", "f1", "recall@5")):
    """Accuracy against prompt tokens and against seconds per question, one point per run and variant.

    Colour = method, marker = metric; the label names the variant and dataset, moved apart by
    `plotting.place_labels` (adjustText) so that no two labels overlap, a thin line joining a moved label
    to its point. Log x axes, because a no-LLM retriever and an LLM agent differ by orders of magnitude.
    The legend sits to the right of the plots, outside both axes.
    """
    import matplotlib.pyplot as plt
    from matplotlib.lines import Line2D

    from .plotting import empty_state, place_labels

    metrics = list(metrics)
    colors = {spec.name: spec.color for spec in entries().values() if spec.kind != "report"}
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
            ax.scatter(x, r["value"], color=colors.get(r["method"], "#333333"),
                       marker=markers.get(r["metric"], "o"), s=46, alpha=0.85, edgecolor="white", linewidth=0.5, zorder=3)
            xs.append(x)
            ys.append(float(r["value"]))
            texts.append(ax.text(x, r["value"], f"{r['variant']} | {r['dataset']}", fontsize=8, alpha=0.9, zorder=4))
        ax.set_xscale("log")
        ax.set_xlabel(label)
        ax.set_ylim(-0.05, 1.1)
        if xs:  # room on both sides of the points for their labels (log axes: a factor, not an offset)
            ax.set_xlim(min(xs) / 4, max(xs) * 4)
        else:
            empty_state(ax, "no scored run records cost yet")
        placed.append((ax, texts, xs, ys))
    axes[0].set_ylabel("score (see legend for the metric)")
    handles = [Line2D([], [], color=c, marker="o", linestyle="", label=m) for m, c in colors.items()
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
    """Share of questions lost at each stage, one bar per run group ("method · dataset"); a run group that
    lost nothing is listed as such, and with no loss at all the figure says "no errors" in words."""
    import matplotlib.pyplot as plt

    from .plotting import empty_state

    if stages.empty or not (stages["share"] > 0).any():
        fig, ax = plt.subplots(figsize=(7, 1.8))
        runs = sorted({f"{m} · {d}" for m, d in zip(stages.get("method", []), stages.get("dataset", []))})
        empty_state(ax, "no run attributes its errors yet" if stages.empty else
                    "no errors: no stage lost a question in " + ", ".join(runs))
        return fig
    table = stages.pivot_table(index=["method", "dataset"], columns="stage", values="share", aggfunc="mean")
    table = table.loc[:, (table > 0).any(axis=0)]  # stages that lost nothing anywhere add only legend entries
    table.index = [f"{m} · {d}" + ("  (no errors)" if not (row > 0).any() else "")
                   for (m, d), row in zip(table.index, table.fillna(0).values)]
    fig, ax = plt.subplots(figsize=(9, 0.45 * len(table) + 1.6 + 0.25 * table.shape[1]))
    table.plot.barh(stacked=True, ax=ax, width=0.75, colormap="tab20")
    ax.set_xlabel("share of questions lost at the stage")
    ax.set_ylabel("")
    ax.set_xlim(0, 1)
    # below the bars, one stage a line: long stage names never squeeze the plot
    ax.legend(fontsize=9, loc="upper left", bbox_to_anchor=(0.0, -0.45 / fig.get_figheight() * 3), title="stage",
              title_fontsize=9, frameon=False)
    fig.tight_layout()
    return fig


# ----------------------------------------------------------------------------- paper beside ours

def side_by_side(scores, published, method: str):
    """One table per method: rows = datasets; our columns say variant, metric, n and LLM; the paper's
    columns say 'published: <system>'. Cells are fractions in [0, 1]; empty where one side has no number."""
    import pandas as pd

    ours = scores[scores["method"] == method]
    ours = ours[ours["metric"].isin(paper_metrics().get(method, ()))]
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
