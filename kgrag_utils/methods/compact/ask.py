"""Compact relation selection's stages of one asked question (`Method.ask`): the chain proposals, the chain
kept by the derivability check, the compact facts and what they derive, the consistency checks and the gate,
and the LLM's reply from the compact context."""

from __future__ import annotations

from typing import Mapping

from ...errors import ConfigError
from ..asked import Gist, Stage, fact_text


KINDS = ("kgqa",)  # the dataset kinds a typed question can be asked over


def item_kind(method) -> str:
    if getattr(method, "kind", "kgqa") != "kgqa":
        raise ConfigError("ask takes a KG question: prepare Compact on a KG question dataset (a kinship story has no "
                          "free-text question to type).")
    return "kgqa"


def _chain_relations(chain) -> list[str]:
    if not chain:
        return []
    if isinstance(chain, str):
        return [c.strip().lstrip("~") for c in chain.replace("→", ">").split(">") if c.strip()]
    return [str(step[0] if isinstance(step, (list, tuple)) else step).lstrip("~") for step in chain]


def stages(rec: Mapping) -> list[Stage]:
    props = rec.get("proposals") or []
    out = [Stage("Chain proposals (relation knowledge: " + str(rec.get("knowledge") or "-") + ")",
                 "" if props else "none", rows=[{"chain": p.get("chain"), "source": p.get("source"),
                                                  "score": p.get("score"), "derivable": p.get("derivable"),
                                                  "answers": p.get("n_answers")} for p in props[:6]]),
           Stage("Chain (first derivable proposal)", str(rec.get("chain") or "(none derivable)")
                 + (f" from {', '.join(map(str, rec.get('topic_entities') or []))}" if rec.get("topic_entities") else ""))]
    facts = rec.get("compact_facts") or []
    out.append(Stage("Compact facts and the derivation", f"{len(facts)} facts derive "
                     f"{', '.join(map(str, rec.get('derived_answers') or [])) or 'nothing'}",
                     rows=[{"fact": fact_text(f)} for f in facts[:15]]))
    cons = rec.get("consistency") or {}
    rows = [{"check": k, "applied": bool(v), "conflicts": str((cons.get("conflicts") or {}).get(k, "-"))}
            for k, v in (cons.get("applicable") or {}).items()]
    out.append(Stage("Checks and gate", f"consistent: {cons.get('consistent')}; gate {rec.get('gate')} "
                     "(the derived answer replaces the LLM's when the gate is open)", rows=rows))
    if "answer_compact" in rec or "llm_compact" in rec:
        out.append(Stage("LLM reads the compact facts", str(rec.get("answer_compact") or "(no answer)"),
                         block=str(rec.get("llm_compact") or "")))
    if rec.get("answers"):
        out.append(Stage("Score", f"derived Hits@1 {rec.get('derived_hits@1')}, LLM on compact facts "
                                  f"{rec.get('hits@1_compact')} (gold: {', '.join(map(str, rec['answers']))})"))
    return out


def gist(rec: Mapping) -> Gist:
    derived = [str(a) for a in rec.get("derived_answers") or []]
    read = rec.get("answer_compact")
    answers = derived if rec.get("gate") or not read else [str(read)]
    steps = rec.get("chain_steps") or []
    relations = [str(s[0]) for s in steps] if steps else _chain_relations(rec.get("chain"))
    facts = [tuple(map(str, f[:3])) for f in rec.get("compact_facts") or []]
    return Gist(answers, relations, facts, note=f"chain {rec.get('chain') or '-'}"
                + (" (gate open: the derived answer)" if rec.get("gate") else ""))
