"""Ask your own question: `method.ask("question text", topic=None)` returns an `Asked`, the question's stages
in the method's own terms, shown as HTML in JupyterLab and as plain text under papermill or `print`.

Each method supplies its stages in `methods/<m>/ask.py` (pure functions of one record):
`stages(record) -> list[Stage]` (SimGRAG: pattern, candidates, subgraphs with GSD terms, answer; compact: chain
proposals, chain, compact facts, checks and gate, reply; vector rerank: seeds, candidates, the rerank reply,
answer; KGP: seeds, the walk, reader) and `gist(record) -> Gist` (the answer, the KG relations its evidence
used and the facts it kept), which `ask_all` lays side by side.
"""

from __future__ import annotations

import hashlib
import html
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

__all__ = ["Stage", "Gist", "Asked", "question_item", "fact_text", "ask_box", "ask_here"]

_STYLE = ("<style>.kgrag-ask table{border-collapse:collapse;font-size:12px;margin:2px 0 8px}.kgrag-ask td,"
          ".kgrag-ask th{padding:2px 8px;text-align:left;vertical-align:top;border-bottom:1px solid #ddd}"
          ".kgrag-ask pre{white-space:pre-wrap;max-height:18em;overflow:auto;background:#f7f7f7;padding:4px}</style>")


@dataclass
class Stage:
    """One stage of a question's way through a method: a line of text, a block (a prompt, a reply) and/or rows."""

    title: str
    text: str = ""
    rows: list[dict] = field(default_factory=list)
    block: str = ""


@dataclass
class Gist:
    """What a method made of the question, in terms every method shares (for `ask_all`)."""

    answer: list[str]
    relations: list[str]
    facts: list[tuple[str, str, str]]
    note: str = ""


def fact_text(fact: Sequence) -> str:
    return "(" + ", ".join(str(x) for x in list(fact)[:3]) + ")"


def _rows_text(rows: list[dict], limit: int = 12) -> str:
    if not rows:
        return ""
    cols = list(dict.fromkeys(k for r in rows for k in r))
    lines = [" | ".join(cols)] + [" | ".join(_cell(r.get(c)) for c in cols) for r in rows[:limit]]
    more = [f"... {len(rows) - limit} more"] if len(rows) > limit else []
    return "\n".join("    " + ln for ln in lines + more)


def _cell(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.3f}"
    if isinstance(value, (list, tuple)):
        return ", ".join(map(str, value))
    return "" if value is None else str(value)


@dataclass
class Asked:
    """A question asked of one method: its item, its record, its stages and its gist."""

    method: str
    label: str
    question: str
    topic: list[str]
    topic_source: str
    record: Mapping
    stages: list[Stage]
    gist: Gist

    @property
    def answer(self) -> list[str]:
        return list(self.gist.answer)

    def to_text(self) -> str:
        head = [f"{self.label}: {self.question}",
                f"  topic entities: {', '.join(self.topic) or '-'} ({self.topic_source})"]
        if self.record.get("error"):
            head.append(f"  ERROR: {self.record['error']}")
        out = head
        for i, st in enumerate(self.stages, 1):
            out.append(f"{i}. {st.title}" + (f": {st.text}" if st.text else ""))
            if st.rows:
                out.append(_rows_text(st.rows))
            if st.block:
                out.append("\n".join("    " + ln for ln in st.block.strip().splitlines()[-20:]))
        out.append(f"=> answer: {', '.join(self.answer) or '(none)'}")
        return "\n".join(out)

    def __str__(self) -> str:
        return self.to_text()

    def __repr__(self) -> str:
        return self.to_text()

    def _repr_html_(self) -> str:
        esc = html.escape
        parts = [_STYLE, "<div class='kgrag-ask'>", f"<h4>{esc(self.label)}: {esc(self.question)}</h4>",
                 f"<p>topic entities: <b>{esc(', '.join(self.topic) or '-')}</b> ({esc(self.topic_source)})</p>"]
        if self.record.get("error"):
            parts.append(f"<p style='color:#b00'>error: {esc(str(self.record['error']))}</p>")
        parts.append("<ol>")
        for st in self.stages:
            parts.append(f"<li><b>{esc(st.title)}</b>" + (f": {esc(st.text)}" if st.text else ""))
            if st.rows:
                cols = list(dict.fromkeys(k for r in st.rows for k in r))
                parts.append("<table><tr>" + "".join(f"<th>{esc(c)}</th>" for c in cols) + "</tr>" + "".join(
                    "<tr>" + "".join(f"<td>{esc(_cell(r.get(c)))}</td>" for c in cols) + "</tr>" for r in st.rows[:20])
                    + "</table>")
            if st.block:
                parts.append(f"<pre>{esc(st.block.strip())}</pre>")
            parts.append("</li>")
        parts.append(f"</ol><p>answer: <b>{esc(', '.join(self.answer) or '(none)')}</b></p></div>")
        return "".join(parts)


def question_item(question: str, topic: str | Sequence[str] | None, answers: Sequence[str] | None, kind: str,
                  kg=None, embedder: Any = None):
    """The item a method runs for a typed question: a KG question (topic entities: `topic`, else the question's
    `[X]` marks, else linked over `kg` with `kgrag_utils.linking`) or a passage question."""
    from ..datasets.items import KGQuestion, PassageQuestion
    from ..datasets.items import marked_names

    if not isinstance(question, str) or not question.strip():
        from ..errors import ConfigError

        raise ConfigError("ask needs a question: method.ask(\"Who directed [The Matrix]?\", topic=None).")
    qid = "ask-" + hashlib.sha1(question.encode("utf-8")).hexdigest()[:10]
    golds = [answers] if isinstance(answers, str) else list(answers or [])
    if kind == "passages":
        return PassageQuestion(qid=qid, question=question, answers=golds, paragraphs=[], supporting=[],
                               supporting_titles=[], qtype="asked", meta={"topic_source": "-"})
    topics = [topic] if isinstance(topic, str) else list(topic or [])
    source = "given"
    if not topics:
        topics, source = marked_names(question), "marked [X]"
    meta: dict = {}
    if not topics and kg is not None:
        from ..linking import EntityLinker

        links = EntityLinker(kg, embedder=embedder).link(question)
        topics, source = [x.name for x in links], "linked (" + ", ".join(f"{x.how} '{x.mention}'" for x in links) + ")"
        meta["topic_links"] = [vars(x) for x in links]
    if kg is not None:
        unknown = [t for t in topics if not kg.has_entity(t)]
        if unknown:
            from ..errors import ConfigError, did_you_mean

            tip = did_you_mean(unknown[0], [str(n) for n in kg.entity_names])
            raise ConfigError(f"topic {unknown[0]!r} is not an entity of the KG{' (' + tip + ')' if tip else ''}: "
                              "spell it as the facts do, or pass topic=None to link it.")
    meta["topic_source"] = source if topics else "none found"
    return KGQuestion(qid=qid, question=question, topic_entities=topics, answers=golds, chain=None, hops=0,
                      qtype="asked", meta=meta)


def ask_box(asker: Any, question: str = "", topic: str = ""):
    """A live box for JupyterLab: type a question (and optionally the topic entity), press Ask, see the stages.
    `asker`: a prepared method or an `ask_all.AskEveryMethod` (anything with `.ask(question, topic=...)`).
    Needs ipywidgets; under papermill show `asker.ask(question)` instead (static)."""
    import ipywidgets as w
    from IPython.display import display

    q = w.Text(value=question, placeholder="Who directed [The Matrix]?", description="question",
               layout=w.Layout(width="70%"))
    t = w.Text(value=topic, placeholder="(optional) topic entity", description="topic")
    button = w.Button(description="Ask", button_style="primary")
    out = w.Output()

    def on_ask(_=None) -> None:
        out.clear_output()
        with out:
            try:
                display(asker.ask(q.value, topic=t.value.strip() or None))
            except Exception as exc:  # a bad question or topic: its one line, shown where the answer goes
                print(f"{type(exc).__name__}: {exc}")

    button.on_click(on_ask)
    box = w.VBox([w.HBox([q, button]), t, out])
    box.add_class("kgrag-ask-box")
    return box


def ask_here(asker: Any, question: str, topic: str | Sequence[str] | None = None):
    """What a notebook's "Ask your own question" cell calls: the stages of `question` (static, so papermill keeps
    them), and in a live JupyterLab kernel also `ask_box` below it, to type the next question. Returns the result."""
    import os

    from IPython.display import display

    from .. import progress, records

    result = asker.ask(question, topic=topic)
    display(result)
    batch = bool(os.environ.get(records.ENV_RUN_DIR)) or os.environ.get(progress.PROGRESS_ENV, "").lower() in ("text", "off")
    if progress._in_jupyter_kernel() and progress._have_ipywidgets() and not batch:
        display(ask_box(asker, question, ", ".join(topic) if isinstance(topic, (list, tuple)) else (topic or "")))
    return result
