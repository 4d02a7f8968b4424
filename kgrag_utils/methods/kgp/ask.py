"""KGP's stages of one asked question (`Method.ask`): the TF-IDF seeds, the walk over the passage graph (the
evidence the agent wrote at each step and the neighbours it picked), the passages retrieved and the reader."""

from __future__ import annotations

from typing import Mapping

from ..asked import Gist, Stage


KINDS = ("passages",)  # the dataset kinds a typed question can be asked over


def item_kind(method) -> str:
    return "passages"


def stages(rec: Mapping) -> list[Stage]:
    hops = rec.get("hops") or []
    out = [Stage("Seeds (TF-IDF)", "", rows=[{"passage": s.get("pid"), "score": s.get("score")}
                                              for s in rec.get("seeds") or []]),
           Stage("The walk", f"{len(hops)} step(s)",
                 rows=[{"step": i, "path": " → ".join(map(str, h.get("path") or [])),
                        "next evidence (LLM)": h.get("query") if h.get("agent_called") else "(the question)",
                        "picked": ", ".join(map(str, h.get("chosen") or []))} for i, h in enumerate(hops, 1)]),
           Stage("Retrieved passages", ", ".join(map(str, (rec.get("retrieved") or [])[:10])) or "(none)")]
    if "answer" in rec or rec.get("reader_raw"):
        out.append(Stage("Reader (LLM)", str(rec.get("answer") or "(no answer)"), block=str(rec.get("reader_raw") or "")))
    return out


def gist(rec: Mapping) -> Gist:
    answer = [str(rec["answer"])] if rec.get("answer") else []
    return Gist(answer, [], [], note="retrieved " + ", ".join(map(str, (rec.get("retrieved") or [])[:3])))
