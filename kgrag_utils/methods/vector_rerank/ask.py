"""Vector retrieval + LLM rerank's stages of one asked question (`Method.ask`): the query entities and seeds,
the expanded candidates, the rerank reply and the facts (or passages) it chose, and the answer."""

from __future__ import annotations

from typing import Mapping

from ..asked import Gist, Stage, fact_text


KINDS = ("kgqa", "passages")  # the dataset kinds a typed question can be asked over


def item_kind(method) -> str:
    return getattr(method, "dataset_kind", "passages")


def _graph(rec: Mapping) -> Mapping:
    g = rec.get("graph") or {}
    return g.get("rerank") or g.get("expand") or {}


def _chosen_triples(rec: Mapping) -> list[tuple[str, str, str]]:
    g = _graph(rec)
    triple_of = {int(c[0]): t for c, t in zip(g.get("candidates") or [], g.get("candidate_triples") or [])}
    return [tuple(map(str, triple_of[int(c[0])][:3])) for c in (rec.get("rerank") or {}).get("chosen") or []
            if int(c[0]) in triple_of and len(triple_of[int(c[0])]) >= 3]


def stages(rec: Mapping) -> list[Stage]:
    g, rr = _graph(rec), rec.get("rerank") or {}
    out = [Stage("Query entities and seeds", f"{g.get('query_entities')} ({g.get('entity_source')})",
                 rows=[{"seed entity": s[1], "similarity": s[2]} for s in g.get("seed_entities") or []])]
    chosen = {int(c[0]) for c in rr.get("chosen") or []}
    out.append(Stage("Candidates (seeds expanded, capped by similarity to the question)",
                     f"{g.get('expansion_size')} relations by hop {g.get('expansion_by_hop')}",
                     rows=[{"#": c[0], "candidate": c[1], "similarity": c[2], "chosen": int(c[0]) in chosen}
                           for c in (g.get("candidates") or [])[:15]]))
    out.append(Stage("Rerank reply (LLM)", f"status {rr.get('status')}; chose {sorted(chosen) or 'nothing'}",
                     block=str(rr.get("raw") or "")))
    row = (rec.get("variants") or {}).get("rerank") or {}
    if "predictions" in row or "answer_raw" in row:
        out.append(Stage("Answer from the chosen facts (LLM)", ", ".join(row.get("predictions") or []) or "(none)",
                         block=str(row.get("answer_raw") or "")))
    elif row.get("passages"):
        out.append(Stage("Passages kept", ", ".join(map(str, row["passages"]))))
    return out


def gist(rec: Mapping) -> Gist:
    row = (rec.get("variants") or {}).get("rerank") or {}
    facts = _chosen_triples(rec)
    answer = list(row.get("predictions") or []) or [str(p) for p in row.get("passages") or []]
    return Gist(answer, list(dict.fromkeys(f[1] for f in facts)), facts,
                note="picked " + "; ".join(fact_text(f) for f in facts[:3]) if facts else "picked nothing")
