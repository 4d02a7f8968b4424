"""A FAKE LLM that replays the gold patterns of a dataset's questions (plumbing tests and demos, never reported numbers)."""

from __future__ import annotations

from typing import Sequence

from .oracle import oracle_pattern
from .pattern import marked_entities




def replay_gold_llm(questions: Sequence, cache=False, form: str = "text"):
    """A FAKE LLM for plumbing tests and demos, never for reported numbers.

    Pattern prompts are answered with the question's gold pattern (relation names with spaces,
    as a model would write them); answer prompts with the last entity of graph [1] that the
    question does not mention. Claims (FactKG: no gold chain) get a pattern that links the claim's
    entities with the relation "related to" (or, for one entity, an UNKNOWN neighbour); verification
    prompts get "True" when the evidence has a graph [1], else "False". It sees no gold answers or labels.
    form="json": patterns and answers in the JSON form a schema-decoding LLM writes (load it with
    structured="schema"), so the method builds the prompts of that mode.
    """
    import json
    import re

    from ....llm import load_llm
    from ..prompts import render_pattern_answer

    gold = {}
    for q in questions:
        p = oracle_pattern(q)
        if p is not None:
            gold[q.question] = render_pattern_answer(["(replayed gold pattern)"],
                                                     [(h, r.replace("_", " "), t) for h, r, t in p.triples()], form)
        elif q.topic_entities:  # a claim: its entities, linked
            names = [str(e).replace("_", " ") for e in q.topic_entities]
            triples = ([(names[0], "related to", n) for n in names[1:]] if len(names) > 1
                       else [(names[0], "related to", "UNKNOWN entity 1")])
            gold[q.question] = render_pattern_answer(["(claim entities linked)"], triples, form)

    def respond(text: str) -> str:
        question = text.rsplit("Question:", 1)[-1].strip()
        if "\nClaim:" in text:  # a verification prompt: look at the last turn only
            last = text.rsplit("Evidence:", 1)[-1]
            return "The evidence has a graph.\nAnswer: True" if "graph [1]:" in last else "No evidence.\nAnswer: False"
        if "Evidence:" not in text:  # a pattern prompt; a question it was not prepared with: its first [X] mark
            marked = [(m, "related to", "UNKNOWN entity 1") for m in marked_entities(question)[:1]]
            if not marked and form == "json":  # the schema asks for at least one triple
                marked = [("UNKNOWN entity 1", "related to", "UNKNOWN entity 2")]
            return gold.get(question) or (render_pattern_answer(["(marked entity)"], marked, form) if marked
                                          else "Phrases:\nTriples:")
        first = next((ln for ln in reversed(text.splitlines()) if ln.startswith("graph [1]:")), "")  # not a shot's
        names = [n for fact in re.findall(r"\(([^()]*)\)", first) for n in (fact.split(", ")[0], fact.split(", ")[-1])]
        names = [n for n in names if n and n.casefold() not in question.casefold()]
        answer = names[-1] if names else "unknown"
        return json.dumps({"answers": [answer]}) if form == "json" else answer

    return load_llm("fake", responses=respond, cache=cache, structured="schema" if form == "json" else None)
