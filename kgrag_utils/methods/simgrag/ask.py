"""SimGRAG's stages of one asked question (`Method.ask`): the pattern, the candidates per pattern node and
relation, the top-k subgraphs with their GSD terms, the evidence and the answer."""

from __future__ import annotations

from typing import Mapping

from ..asked import Gist, Stage, fact_text


KINDS = ("kgqa",)  # the dataset kinds a typed question can be asked over


def item_kind(method) -> str:
    return "kgqa"


def _num(x) -> str:
    return f"{x:.3f}" if isinstance(x, (int, float)) and not isinstance(x, bool) else "-"


def stages(rec: Mapping) -> list[Stage]:
    pattern = (rec.get("pattern") or {}).get("triples") or rec.get("pattern_triples") or []
    ok = "usable" if rec.get("pattern_ok") else f"unusable ({rec.get('pattern_error') or 'no triples'})"
    out = [Stage("Pattern (LLM)", f"{len(pattern)} triple(s), {ok}", rows=[{"pattern triple": fact_text(t)}
                                                                          for t in pattern],
                 block=rec.get("pattern_raw") or "")]
    cands = rec.get("candidates") or {}
    rows = [{"pattern item": node, "kind": "entity", "nearest KG names (distance)":
             ", ".join(f"{n} ({_num(d)})" for n, d in top[:4])} for node, top in (cands.get("nodes") or {}).items()]
    rows += [{"pattern item": r.get("relation"), "kind": "relation", "nearest KG names (distance)":
              ", ".join(f"{n} ({_num(d)})" for n, d in (r.get("top") or [])[:4])} for r in cands.get("relations") or []]
    out.append(Stage("Candidates", "" if rows else "none (no usable pattern)", rows=rows))
    subs = rec.get("subgraphs") or []
    out.append(Stage("Top-k subgraphs by graph semantic distance (GSD = node terms + edge terms)",
                     f"{len(subs)} found" + (" (time limit reached)" if rec.get("timed_out") else ""),
                     rows=[{"rank": i, "GSD": s.get("gsd"),
                            "node terms": round(sum((s.get("node_terms") or {}).values()), 4),
                            "edge terms": " + ".join(_num(x) for x in s.get("edge_terms") or []),
                            "facts": "; ".join(fact_text(t) for t in s.get("triples") or [])}
                           for i, s in enumerate(subs, 1)]))
    out.append(Stage("Answer (LLM reads the subgraphs)", ", ".join(rec.get("answers") or []) or "(none)",
                     block="\n".join(rec.get("evidence") or [])))
    if rec.get("answers_gold"):
        out.append(Stage("Score", f"Hits@1 {rec.get('hits@1')} (gold: {', '.join(rec['answers_gold'])}); "
                                  f"failing stage: {rec.get('failed_stage') or '-'}"))
    return out


def gist(rec: Mapping) -> Gist:
    subs = rec.get("subgraphs") or []
    facts = [tuple(map(str, t[:3])) for t in (subs[0].get("triples") or [])] if subs else []
    pattern = (rec.get("pattern") or {}).get("triples") or []
    return Gist(list(rec.get("answers") or []), list(dict.fromkeys(f[1] for f in facts)), facts,
                note="pattern " + "; ".join(fact_text(t) for t in pattern) if pattern else "no usable pattern")
