"""The IIRC fixture: two linked Wikipedia-like articles with questions in IIRC's released format.

Hand-written and deterministic; `fixtures.ensure_fixture` writes it (see that module's docstring).
"""

from __future__ import annotations

import json

# ----------------------------------------------------------------------------- IIRC


def _link(text: str, anchor: str, target: str) -> dict:
    start = text.index(anchor)
    return {"indices": [start, start + len(anchor)], "target": target}


def _ctx(passage: str, source_text: str, snippet: str) -> dict:
    start = source_text.find(snippet)
    return {"passage": passage, "text": snippet, "indices": [start, start + len(snippet)]}


def _span(text: str, passage: str, source_text: str) -> dict:
    start = source_text.find(text)
    return {"text": text, "passage": passage, "type": "answer", "start": start, "end": start + len(text)}


_ARTICLES = {
    "bergen conservatory": (
        "<p>The <b>Bergen Conservatory</b> is a music school in <a href=\"Bergen\">Bergen</a>, Norway.</p>\n"
        "<p>It was founded in 1905 by the pianist <a href=\"Ingrid%20Lund\">Ingrid Lund</a>.</p>\n"
        "<p>The school moved to a new building by the harbour in 1981.</p>"),
    "oslo philharmonic": (
        "<p>The <b>Oslo Philharmonic</b> is a Norwegian symphony orchestra.</p>\n"
        "<p>The orchestra was founded in 1919 and gives its concerts in the Oslo Concert Hall.</p>\n"
        "<p>Its chief conductor since 2020 is Klaus M&auml;kel&auml;.</p>"),
    "Brenna River": (  # a key that is not lower-cased, as a few in the release are
        "<p>The <b>Brenna River</b> is a river in western Norway.</p>\n"
        "<p>The towns of Kettleby and Hallow Mill lie on its banks.</p>\n"
        "<p>It flows into <a href=\"Lake%20Varnholm\">Lake Varnholm</a> after 64 kilometres.</p>"),
    "halden fjord": (
        "<p><b>Halden Fjord</b> is a fjord in south-eastern Norway.</p>\n"
        "<p>It is 12 kilometres long and reaches a depth of 80 metres.</p>"),
    "marta eide": (
        "<p><b>Marta Eide</b> (1890 - 1972) was a Norwegian painter.</p>\n"
        "<p>She was born in Trondheim and studied in Paris.</p>"),
    "oslo": ("<p><b>Oslo</b> is the capital of Norway.</p>\n"
             "<p>The city has about 700,000 inhabitants.</p>"),
}


def _passage(pid: str, title: str, text: str, anchors: list[tuple[str, str]], questions: list[dict]) -> dict:
    return {"pid": pid, "title": title, "text": text, "links": [_link(text, a, t) for a, t in anchors],
            "questions": questions}


def iirc_world() -> dict[str, object]:
    """The fixture's split files (lists of main passages) and its context articles."""
    def art(title: str) -> str:
        import html as _html
        import re as _re

        raw = _ARTICLES.get(title.lower(), _ARTICLES.get(title, ""))
        return _html.unescape(_re.sub(r"<[^>]*>", "", raw))

    t1 = ("Arvid Tollefsen (born 1961) is a Norwegian composer. He studied at the Bergen Conservatory and later "
          "played viola with the Oslo Philharmonic for ten years.")
    t2 = ("Lake Varnholm is a lake in Vestland county. It is fed by the Brenna River and drains into the sea "
          "through the village of Saltvik.")
    t3 = ("The Halden Fjord Light is a lighthouse at the mouth of the Halden Fjord. It was painted in 1931 by "
          "Marta Eide.")
    t4 = "Sofie Brekke is a Norwegian violinist who has lived in Oslo since 2004."
    train = [
        _passage("p1", "Arvid Tollefsen", t1,
                 [("Bergen Conservatory", "Bergen Conservatory"), ("Oslo Philharmonic", "Oslo Philharmonic")], [
            {"qid": "q-train-0",
             "question": "How many years after the Bergen Conservatory was founded was Arvid Tollefsen born?",
             "answer": {"type": "value", "answer_value": "56", "answer_unit": "years"},
             "question_links": ["Bergen Conservatory"],
             "context": [_ctx("main", t1, "Arvid Tollefsen (born 1961)"),
                         _ctx("Bergen Conservatory", art("Bergen Conservatory"), "It was founded in 1905")]},
            {"qid": "q-train-1", "question": "Who founded the school where Arvid Tollefsen studied?",
             "answer": {"type": "span", "answer_spans": [_span("Ingrid Lund", "Bergen Conservatory",
                                                               art("Bergen Conservatory"))]},
             "question_links": ["Bergen Conservatory"],
             "context": [_ctx("main", t1, "He studied at the Bergen Conservatory"),
                         _ctx("Bergen Conservatory", art("Bergen Conservatory"),
                              "It was founded in 1905 by the pianist Ingrid Lund.")]},
            {"qid": "q-train-2", "question": "Was the orchestra Arvid Tollefsen played with founded before 1950?",
             "answer": {"type": "binary", "answer_value": "yes"},
             "question_links": ["Oslo Philharmonic"],
             "context": [_ctx("main", t1, "played viola with the Oslo Philharmonic"),
                         _ctx("Oslo Philharmonic", art("Oslo Philharmonic"), "The orchestra was founded in 1919")]},
            {"qid": "q-train-3", "question": "What is the name of Arvid Tollefsen's wife?",
             "answer": {"type": "none"}, "question_links": [], "context": []},
        ]),
        _passage("p2", "Lake Varnholm", t2, [("Brenna River", "Brenna River"), ("Saltvik", "Saltvik")], [
            {"qid": "q-train-4", "question": "Which towns lie on the river that feeds Lake Varnholm?",
             "answer": {"type": "span", "answer_spans": [_span("Kettleby", "Brenna River", art("Brenna River")),
                                                         _span("Hallow Mill", "Brenna River", art("Brenna River"))]},
             "question_links": ["Brenna River"],
             "context": [_ctx("main", t2, "It is fed by the Brenna River"),
                         # whitespace differs from the article: matched after normalisation
                         _ctx("Brenna River", art("Brenna River"), "The towns of  Kettleby and Hallow Mill")]},
            {"qid": "q-train-5", "question": "How long is the river?", "answer": {"type": "bad"},
             "question_links": [], "context": []},
        ]),
    ]
    dev = [
        _passage("p3", "Halden Fjord Light", t3, [("Halden Fjord", "Halden Fjord"), ("Marta Eide", "Marta Eide")], [
            {"qid": "q-dev-0", "question": "How old was the painter of the Halden Fjord Light when she painted it?",
             "answer": {"type": "value", "answer_value": "41", "answer_unit": "years"},
             "question_links": ["Marta Eide"],
             "context": [_ctx("main", t3, "It was painted in 1931 by Marta Eide."),
                         _ctx("Marta Eide", art("Marta Eide"), "Marta Eide (1890 - 1972)")]},
            {"qid": "q-dev-1", "question": "How deep is the fjord at whose mouth the lighthouse stands?",
             "answer": {"type": "value", "answer_value": "80", "answer_unit": "metres"},
             "question_links": ["Halden Fjord"],
             # a paraphrased snippet: matched by word overlap
             "context": [_ctx("Halden Fjord", art("Halden Fjord"), "reaches a depth of 80 metres, 12 km long")]},
        ]),
    ]
    test = [
        _passage("p4", "Sofie Brekke", t4, [("Oslo", "Oslo")], [
            {"qid": "q-test-0", "question": "How many people live in the city where Sofie Brekke has lived since 2004?",
             "answer": {"type": "span", "answer_spans": [_span("about 700,000", "Oslo", art("Oslo"))]},
             "question_links": ["Oslo"],
             "context": [_ctx("main", t4, "has lived in Oslo since 2004"),
                         _ctx("Oslo", art("Oslo"), "The city has about 700,000 inhabitants.")]},
        ]),
    ]
    return {"train": train, "dev": dev, "test": test, "articles": dict(_ARTICLES)}


def _json(obj) -> bytes:
    return (json.dumps(obj, ensure_ascii=False, indent=1) + "\n").encode("utf-8")


def generate_iirc(seed: int = 0) -> dict[str, bytes]:
    world = iirc_world()
    return {"IIRC/train.json": _json(world["train"]), "IIRC/dev.json": _json(world["dev"]),
            "IIRC/iirc_test.json": _json(world["test"]), "IIRC/context_articles.json": _json(world["articles"])}

