"""One question, every method that applies to the dataset, side by side: where SimGRAG's pattern, compact's
chain and the reranker's pick agree, and where they part.

    bench = AskEveryMethod("data/example-kg", llm_preset="fake")   # prepares each method once
    bench.ask("Who published the book written by [Tobin Harrow]?")  # a SideBySide: HTML in JupyterLab, text in print
    ask_all(question, dataset, topic=None, **config)                 # the same, in one call

Which methods apply: those whose `ask.py` lists the dataset's kind in `KINDS` (KG questions: SimGRAG, compact,
vector rerank; passages: vector rerank, KGP). `config` holds parameters shared by the methods' configs
(llm_preset, embedder, ...); each method takes those of its fields, the rest keep their defaults.
"""

from __future__ import annotations

import html
from dataclasses import dataclass
from typing import Any, Sequence

from ..metrics import normalize_answer
from .asked import Asked, fact_text

__all__ = ["AskEveryMethod", "SideBySide", "ask_all", "methods_for"]


def methods_for(kind: str) -> list:
    """Registry entries of the methods that can be asked a question over a dataset of this kind."""
    from .registry import methods

    return [s for s in methods("method") if kind in getattr(s.method_class.ask_view(), "KINDS", ())]


@dataclass
class SideBySide:
    """The same question's `Asked` from each method, and where they agree."""

    question: str
    asked: list[Asked]

    def rows(self) -> list[dict]:
        return [{"method": a.label, "answer": ", ".join(a.answer) or "(none)",
                 "KG relations used": " > ".join(a.gist.relations) or "-",
                 "facts kept": "; ".join(fact_text(f) for f in a.gist.facts[:4]) or "-", "how": a.gist.note}
                for a in self.asked]

    def agreement(self) -> list[str]:
        """Sentences: which methods give the same answer, and which relations they share or not."""
        lines = []
        answers = {a.label: {normalize_answer(x) for x in a.answer} - {""} for a in self.asked}
        groups: dict[str, list[str]] = {}
        for a in self.asked:
            key = ", ".join(a.answer) if answers[a.label] else ""
            groups.setdefault(key, []).append(a.label)
        for key, labels in groups.items():
            lines.append(f"{' and '.join(labels)} {'agree on' if len(labels) > 1 else 'answers'} "
                         f"{key!r}" if key else f"{' and '.join(labels)}: no answer")
        rels = {a.label: set(a.gist.relations) for a in self.asked if a.gist.relations}
        if len(rels) > 1:
            shared = set.intersection(*rels.values())
            lines.append(f"relations all of {', '.join(rels)} used: {', '.join(sorted(shared)) or 'none'}")
            for label, r in rels.items():
                own = r - set().union(*(v for k, v in rels.items() if k != label))
                if own:
                    lines.append(f"only {label} used: {', '.join(sorted(own))}")
        return lines

    def to_text(self) -> str:
        out = [f"Asked every method: {self.question}"]
        for r in self.rows():
            out.append(f"- {r['method']}: {r['answer']}  | relations {r['KG relations used']} | {r['how']}")
        out += ["", *(f"* {s}" for s in self.agreement()), ""]
        out += [a.to_text() + "\n" for a in self.asked]
        return "\n".join(out)

    __str__ = __repr__ = to_text

    def _repr_html_(self) -> str:
        esc = html.escape
        rows = self.rows()
        cols = list(rows[0]) if rows else []
        table = ("<table><tr>" + "".join(f"<th>{esc(c)}</th>" for c in cols) + "</tr>" + "".join(
            "<tr>" + "".join(f"<td>{esc(str(r[c]))}</td>" for c in cols) + "</tr>" for r in rows) + "</table>")
        agree = "<ul>" + "".join(f"<li>{esc(s)}</li>" for s in self.agreement()) + "</ul>"
        details = "".join(f"<details><summary>{esc(a.label)}: every stage</summary>{a._repr_html_()}</details>"
                          for a in self.asked)
        return (f"<div class='kgrag-ask'><h4>Asked every method: {esc(self.question)}</h4>{table}{agree}{details}"
                "</div>")


class AskEveryMethod:
    """Every method that applies to `dataset` (a name, a folder, or a loaded Dataset), prepared once; `ask`
    puts one question to all of them. `methods`: names to use (default: all that apply)."""

    def __init__(self, dataset: Any, methods: Sequence[str] | None = None, **config: Any):
        from ..errors import ConfigError
        from .registry import get_method

        ds = dataset
        if isinstance(dataset, str):
            from ..datasets import load_dataset

            ds = load_dataset(dataset, split=config.get("split", "test"))
        self.dataset = ds
        applicable = methods_for(ds.kind)
        chosen = [get_method(m) for m in methods] if methods else applicable
        refused = [s.name for s in chosen if s not in applicable]
        if refused:
            raise ConfigError(f"{', '.join(refused)} cannot be asked about a {ds.kind} dataset; methods that can: "
                              f"{', '.join(s.name for s in applicable)}.")
        self.methods = []
        shared = None  # one LLM for every method (the fake is each method's own: SimGRAG's replays its questions)
        for spec in chosen:
            fields = spec.config_class.model_fields
            name = ds.info.get("registered_name", ds.name)
            cfg = spec.config_class(**{k: v for k, v in {"dataset": name, **config}.items() if k in fields})
            if shared is None and cfg.needs_llm and cfg.llm_preset != "fake":
                shared = cfg.load_llm()
            self.methods.append(spec.method_class.prepare(cfg, ds, llm=shared))

    def ask(self, question: str, topic: str | Sequence[str] | None = None,
            answers: Sequence[str] | None = None) -> SideBySide:
        return SideBySide(question, [m.ask(question, topic=topic, answers=answers) for m in self.methods])


def ask_all(question: str, dataset: Any, topic: str | Sequence[str] | None = None, methods: Sequence[str] | None = None,
            **config: Any) -> SideBySide:
    """`AskEveryMethod(dataset, methods, **config).ask(question, topic)` in one call."""
    return AskEveryMethod(dataset, methods, **config).ask(question, topic)
