"""`kgrag repro --list`: each table with its rows, what its runs need, its estimated cost and its command."""

from __future__ import annotations

from ..errors import ConfigError
from ..progress import human_seconds
from .cost import method_of, seconds_per_call
from .plan import Plan, missing_model, plan
from .spec import list_tables, load_spec

__all__ = ["describe", "describe_all"]


def _cost_lines(p: Plan) -> list[str]:
    """LLM calls x measured seconds per call, per preset and method of the table's runs."""
    calls: dict[tuple[str, str], float] = {}
    for path, params in p.expanded():
        run = next(r for r in p.spec.runs if p.names[r.name] == params["run_name"])
        preset = str(params.get("llm_preset") or "")
        per_q = 0.0 if preset == "fake" else p.spec.calls_per_question(run)
        key = (preset, method_of(path))
        calls[key] = calls.get(key, 0.0) + per_q * p.questions(run)
    lines, total, unknown = [], 0.0, False
    for (preset, method), n in calls.items():
        m = seconds_per_call(preset, method)
        if not n:
            lines.append(f"    {preset or 'no preset set'}: no LLM calls")
        elif m.per_call is None:
            unknown = True
            lines.append(f"    {preset}: {n:.0f} LLM calls x ? s/call (never measured here: no run record or result "
                         f"file of this preset holds LLM seconds)")
        else:
            total += n * m.per_call
            whose = f"{m.method} calls" if m.method else "calls of every method"
            lines.append(f"    {preset} ({method or 'no method'}): {n:.0f} LLM calls x {m.per_call:.1f} s/call (measured "
                         f"over {m.calls} {whose} in {m.sources} records and result files, at the threads and load "
                         f"they ran with) = {human_seconds(n * m.per_call)}")
    if not total and not unknown:
        return ["  estimated cost: no LLM calls (the cost counts LLM time only; a run's retrieval and embedding time is "
                "the config's comment's)"]
    head = f"  estimated cost (first run; cached calls cost nothing): {human_seconds(total)}" + (" + unmeasured" if unknown else "")
    return [head, *lines]


def _sample(s) -> str:
    return (f"the first {s.take} of {s.limit} questions drawn with seed {s.seed}" if s.take
            else f"{s.limit or 'all'} questions drawn with seed {s.seed}")


def describe(table: str, limit: int = 0) -> str:
    spec = load_spec(table)
    p = plan(spec, limit)
    out = [f"{spec.table}  ({spec.path}): {spec.title}" + (f"  [published in {spec.published_in}]" if spec.published_in else ""),
           f"  sample per run: {_sample(spec.sample)}" + (" (a run may have its own)" if any(r.sample for r in spec.runs) else "")
           + (f"; --limit {limit}: the first {limit} of it" if p.limit else ""),
           "  rows:"]
    expanded = {params["run_name"]: (path, params) for path, params in p.expanded()}
    for label, runs in spec.entries():
        for name in runs:
            path, prm = expanded[p.names[name]]
            shown = ", ".join(f"{k}={prm[k]}" for k in ("dataset", "llm_preset", "llm_structured") if prm.get(k))
            own = spec.run(name).sample
            out.append(f"    {label}: run {p.names[name]} ({path.name}; {shown})" + (f"; {_sample(own)}" if own else ""))
    for preset in sorted({str(prm.get("llm_preset") or "") for _, prm in expanded.values()} - {""}):
        why = missing_model(preset)
        if why:
            out.append(f"  needs: {why}")
    out += _cost_lines(p)
    out.append(f"  command: {p.command()}" + ("" if limit else f"   (a first look: kgrag repro {spec.table} --limit 2)"))
    return "\n".join(out)


def describe_all(limit: int = 0) -> str:
    names = list_tables()
    if not names:
        raise ConfigError("no reproduction configs in configs/reproduce/.")
    return "\n\n".join(describe(n, limit) for n in names)
