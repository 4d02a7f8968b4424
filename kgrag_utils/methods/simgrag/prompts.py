"""SimGRAG's prompts: the pattern chat, the answer chat and the verification chat, read from the YAML files of
kgrag_utils/prompts (`simgrag_pattern.yaml`, `simgrag_answer.yaml`, `simgrag_verify.yaml`).

* `build_pattern_prompt` - the few-shot chat (4, 8 or 12 shots), then the demonstrations chosen for the
  question (`stages/demos.py`, config demos="nearest"); `form="json"` (the schema-constrained mode) shows every
  shot as the JSON object of `stages.pattern.PATTERN_SCHEMA` instead of the paper's "Phrases:" / "Triples:" lines;
* `build_answer_prompt` - the evidence lines (`stages.generate.evidence_lines`) and the question, after the
  family's worked examples; `build_verify_prompt` - the same for a claim (FactKG), asking for a verdict.
"""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path
from typing import Sequence

from ...errors import ConfigError

__all__ = ["load_prompt_file", "build_pattern_prompt", "render_pattern_answer", "reply_instructions",
           "build_answer_prompt", "render_answer", "build_verify_prompt", "NO_EVIDENCE", "PROMPT_FORMS"]

PROMPT_FORMS = ("text", "json")

NO_EVIDENCE = "(no matching subgraph was found)"

_PROMPTS = Path(__file__).resolve().parents[2] / "prompts"


@lru_cache(maxsize=8)
def load_prompt_file(name: str) -> dict:
    """A YAML prompt file from kgrag_utils/prompts (e.g. 'simgrag_pattern.yaml')."""
    import yaml

    path = _PROMPTS / name
    if not path.is_file():
        raise ConfigError(f"prompt file {path} is missing: reinstall the package (`pip install -e .`).")
    with open(path, encoding="utf-8") as fh:
        return yaml.safe_load(fh)


def _render_triples(triples: Sequence[Sequence[str]]) -> str:
    return "\n".join(f"({h}, {r}, {t})" for h, r, t in triples)


def render_pattern_answer(phrases: Sequence[str], triples: Sequence[Sequence[str]], form: str = "text") -> str:
    """The assistant turn of one shot (also the format the model is asked to follow)."""
    if form == "json":
        return json.dumps({"phrases": list(phrases), "triples": [list(t) for t in triples]}, ensure_ascii=False)
    return f"Phrases: {'; '.join(phrases)}\nTriples:\n{_render_triples(triples)}"


def reply_instructions(instructions: str, spec: dict, form: str) -> str:
    """The instructions with their last "Reply with ..." line replaced by the JSON form's (form="json")."""
    if form not in PROMPT_FORMS:
        raise ConfigError(f"prompt form must be one of {PROMPT_FORMS}, got {form!r}.")
    text = instructions.strip()
    if form == "text":
        return text
    lines = [ln for ln in text.splitlines() if not ln.lstrip().startswith("Reply with")]
    return "\n".join(lines + [spec["reply_json"].strip()])


def _family_shots(spec: dict, what: str, family: str, shots: int, label: str, hint: str = "") -> list[dict]:
    """The first `shots` worked examples of a family of a prompt file; an unknown family or a count out of range is
    refused in one line."""
    families = spec["families"]
    if family not in families:
        raise ConfigError(f"unknown {what} family {family!r}: use one of {sorted(families)}.")
    examples = families[family]
    if not isinstance(shots, int) or isinstance(shots, bool) or not 0 <= shots <= len(examples):
        raise ConfigError(f"{label} must be an integer in 0..{len(examples)}{hint}, got {shots!r}.")
    return list(examples[:shots])


def build_pattern_prompt(question: str, shots: int = 8, family: str = "movies", form: str = "text",
                         relations: Sequence[str] | None = None, demos: Sequence[dict] = ()) -> list[dict]:
    """A chat: system instructions, `shots` worked examples as user/assistant turns, then the question.

    demos: more shots ({"question", "phrases", "triples"}: the demonstrations chosen for this question,
    config demos="nearest"), after the fixed ones, so that what every question shares comes first.
    form: "text" (the paper's Phrases/Triples lines) or "json" (the schema-constrained mode's form).
    relations: the KG's relation names the reply's relations are constrained to (config `relation_vocabulary`);
    the instructions then name them (`relation_vocabulary` in the yaml), since the shots' relations are free words."""
    spec = load_prompt_file("simgrag_pattern.yaml")
    examples = _family_shots(spec, "pattern", family, shots, "shots", " (the paper uses 4, 8 or 12)")
    instructions = (spec.get("family_instructions") or {}).get(family, spec["instructions"])
    system = reply_instructions(instructions, spec, form)
    if relations:
        system = system.rstrip("\n") + "\n" + spec["relation_vocabulary"].strip().format(relations=", ".join(relations))
    chat = [{"role": "system", "content": system}]
    for ex in examples + list(demos):
        chat.append({"role": "user", "content": f"Question: {ex['question']}"})
        chat.append({"role": "assistant", "content": render_pattern_answer(ex["phrases"], ex["triples"], form)})
    chat.append({"role": "user", "content": f"Question: {question}"})
    return chat


# ----------------------------------------------------------------------------- the answer and the verdict


def _user_turn(question: str, lines: Sequence[str]) -> str:
    body = "\n".join(lines) if lines else NO_EVIDENCE
    return f"Evidence:\n{body}\nQuestion: {question}"


def render_answer(answer: str, form: str = "text") -> str:
    """A shot's answer ("A | B") in the prompt's form: as written, or {"answers": ["A", "B"]}."""
    if form == "json":
        return json.dumps({"answers": [a.strip() for a in str(answer).split("|") if a.strip()]}, ensure_ascii=False)
    return str(answer)


def build_answer_prompt(question: str, lines: Sequence[str], family: str = "movies", shots: int = 3,
                        form: str = "text", demos: Sequence[dict] = ()) -> list[dict]:
    """A chat: instructions, `shots` worked examples, then the evidence and the question (form: "text" | "json").

    demos: more worked examples ({"question", "evidence", "answer"}: the demonstrations chosen for this question,
    config answer_demos="nearest") after the fixed ones, so that what every question shares comes first."""
    spec = load_prompt_file("simgrag_answer.yaml")
    examples = _family_shots(spec, "answer", family, shots, "answer shots")
    chat = [{"role": "system", "content": reply_instructions(spec["instructions"], spec, form)}]
    for ex in examples + list(demos):
        chat.append({"role": "user", "content": _user_turn(ex["question"], ex["evidence"])})
        chat.append({"role": "assistant", "content": render_answer(ex["answer"], form)})
    chat.append({"role": "user", "content": _user_turn(question, lines)})
    return chat


def _claim_turn(claim: str, lines: Sequence[str]) -> str:
    body = "\n".join(lines) if lines else NO_EVIDENCE
    return f"Evidence:\n{body}\nClaim: {claim}"


def build_verify_prompt(claim: str, lines: Sequence[str], shots: int = 3) -> list[dict]:
    """A chat: verification instructions, `shots` worked examples, then the evidence and the claim."""
    spec = load_prompt_file("simgrag_verify.yaml")
    examples = spec["examples"]
    if not isinstance(shots, int) or isinstance(shots, bool) or not 0 <= shots <= len(examples):
        raise ConfigError(f"answer shots must be an integer in 0..{len(examples)}, got {shots!r}.")
    chat = [{"role": "system", "content": spec["instructions"].strip()}]
    for ex in examples[:shots]:
        chat.append({"role": "user", "content": _claim_turn(ex["claim"], ex["evidence"])})
        chat.append({"role": "assistant", "content": str(ex["answer"]).strip()})
    chat.append({"role": "user", "content": _claim_turn(claim, lines)})
    return chat
