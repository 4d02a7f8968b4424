"""SimGRAG's nearest demonstrations: a training question's gold chain written as a pattern shot (and answered).

With `demos="nearest"` the pattern prompt keeps its instructions and the first `fixed_shots` fixed
examples (the part every question shares, which llama.cpp's prefix cache covers) and adds the
`shots` training questions nearest to the question (`kgrag_utils.demos.DemoPool`), nearest last,
just before the question. Each one's pattern is written from its gold relation chain in the form
of the fixed shots: the relation in the shots' words and voice (`demonstrations` in
prompts/simgrag_pattern.yaml: MetaQA's `directed_by` becomes "<director> directed <movie>"), the
unknowns numbered and typed as the shots number and type them, one phrase per hop.
"""

from __future__ import annotations

from typing import Any, Sequence

from ....demos import DEMO_POOL_NOISE, DEMO_SPELLING, DEMO_TYPE_MARGIN, DemoPool
from .oracle import oracle_pattern, qtype_node_types
from .pattern import Pattern
from ..prompts import load_prompt_file

__all__ = ["own_type_counts", "own_type_group", "usable_for_pattern", "demo_type", "pattern_demo", "pattern_demo_pool", "answer_demo", "requested_demos", "requested_answer_demos", "default_pool",
           "DEMO_NEED", "demo_wording", "wording_key", "merged_wording", "copied_pattern", "demo_fields"]

#: what a pattern demonstration is written from (named in the refusal when a training split has none)
DEMO_NEED = "a gold relation chain and a topic entity"


def usable_for_pattern(item: Any, train=None) -> bool:
    """A single gold chain from a named topic (conjunctive questions are not written as demonstrations)."""
    return bool(getattr(item, "chain", None)) and bool(getattr(item, "topic_entities", None)) \
        and not getattr(item, "conjunctive", False)


def _plural(kind: str) -> str:
    return kind if kind.endswith("s") else kind + "s"


def demo_wording(family: str) -> tuple[dict, dict]:
    """The prompt file's demonstration wording of one KG family: ({KG relation: entry}, {question type: word})."""
    spec = (load_prompt_file("simgrag_pattern.yaml").get("demonstrations") or {}).get(family) or {}
    return spec.get("relations") or {}, spec.get("types") or {}


def wording_key(family: str) -> str:
    """A short hash of one family's demonstration wording: part of a nearest-demonstration run's key, so that a run
    resumed after the prompt file's wording changed starts afresh instead of mixing two wordings in one record."""
    from ....records import params_hash

    relations, types = demo_wording(family)
    return params_hash({"relations": relations, "types": types})[:8]


def merged_wording(family: str, wording: dict | None = None) -> tuple[dict, dict]:
    """The demonstration wording of one family: the prompt file's, with `wording` ({KG relation: {"words",
    "subject", "forward", "backward"}}, config demo_wording) replacing its entries key by key. A relation the file
    has no entry for needs all four keys."""
    from ....errors import ConfigError

    relations, type_names = demo_wording(family)
    merged = {**relations, **{r: {**relations.get(r, {}), **spec} for r, spec in (wording or {}).items()}}
    for relation in wording or {}:
        missing = [k for k in ("words", "subject", "forward", "backward") if k not in merged[relation]]
        if missing:
            raise ConfigError(f"demo_wording[{relation!r}]: the prompt file's {family!r} demonstrations have no entry "
                              f"for it, so give all of words, subject, forward, backward (missing: {', '.join(missing)}).")
    return merged, type_names


def pattern_demo(item: Any, family: str = "movies", wording: dict | None = None) -> dict:
    """{"id", "question", "phrases", "triples", "topic", "type"} of one training question, in the fixed shots' form.

    Step i of the chain goes from node i-1 (the topic, then `UNKNOWN <type> i-1`) to `UNKNOWN <type> i`;
    the KG fact of the step is (prev, r, next) forward or (next, r, prev) backward, then written with
    the family's wording of r (in the KG's direction with the name's underscores as spaces when the
    family has none). `wording` (config demo_wording) replaces the prompt file's entries of those relations,
    key by key (`merged_wording`). `topic`: the topic entity's name as the triples write it."""
    relations, type_names = merged_wording(family, wording)
    chain = list(item.chain)
    kinds = [type_names.get(k, k) for k in qtype_node_types(getattr(item, "qtype", None), len(chain))]
    names = [str(item.topic_entities[0])] + [f"UNKNOWN {k} {i}" for i, k in enumerate(kinds, 1)]
    subjects = [names[0]] + [f"those {_plural(k)}" for k in kinds]
    phrases, triples = [], []
    for i, (relation, forward) in enumerate(chain, 1):
        head, tail = (names[i - 1], names[i]) if forward else (names[i], names[i - 1])
        words = relations.get(str(relation))
        if words is None:
            text = str(relation).replace("_", " ").replace(".", " ").strip()
            triples.append([head, text, tail])
            phrases.append(f"{text} of {subjects[i - 1]}" if forward else f"what has {text} {subjects[i - 1]}")
            continue
        triples.append([tail, words["words"], head] if words["subject"] == "tail" else [head, words["words"], tail])
        phrases.append(words["forward" if forward else "backward"].format(x=subjects[i - 1]))
    return {"id": str(item.qid), "question": item.question, "phrases": phrases, "triples": triples,
            "topic": names[0]}


def copied_pattern(item: Any, shot: dict) -> Pattern:
    """The pattern a model writes for `item` by copying the demonstration `shot` (a `pattern_demo`) perfectly (config
    pattern_source="copied"): the shot's triples with its topic entity replaced by the question's; the answer node is
    the shot's last UNKNOWN, as `pattern_demo` numbers them. A shot of the question's own type gives the question's
    own gold chain in the demonstrations' words."""
    topic = str(item.topic_entities[0]) if getattr(item, "topic_entities", None) else shot["topic"]
    triples = [[topic if x == shot["topic"] else x for x in t] for t in shot["triples"]]
    last = f" {len(shot['triples'])}"
    answer = next((x for t in triples for x in (t[0], t[2]) if x.startswith("UNKNOWN ") and x.endswith(last)), None)
    return Pattern.from_triples(triples, answer=answer, source="copied")


def demo_fields(item: Any, shots: Sequence[dict], pool: DemoPool | None) -> dict:
    """A record's fields about its chosen demonstrations (`demo_shots`' shots): their question types, how many have
    the question's own (`own_type_group`: all / some / none) and whether the question was respelt for the choice."""
    types = [d.get("qtype") for d in shots]
    return {"pattern_demo_types": types, "demo_own_type": own_type_group(getattr(item, "qtype", None), types),
            "pattern_demo_respelt": pool.respelt(item) if shots and pool is not None else None}


def requested_demos(config) -> str:
    """The pattern demonstrations a config asks for: its `demos`, or "" -> its LLM preset's (`PRESET_DEMOS` in config.py;
    "fixed" for presets it does not list, such as the fake test double)."""
    from ..config import PRESET_DEMOS

    if config.pattern_source == "copied":  # copies a nearest demonstration (SimGRAGConfig refuses demos="fixed")
        return "nearest"
    return config.demos or PRESET_DEMOS.get(config.llm_preset, "fixed")


def requested_answer_demos(config) -> str:
    """The answer demonstrations a config asks for: its `answer_demos`, or "" -> the same as its pattern
    demonstrations (`requested_demos`), so that `demos="fixed"` alone gives the paper's prompts."""
    return config.answer_demos or requested_demos(config)


def _asked_explicitly(config) -> bool:
    """Whether the config itself (not its preset) asks for nearest demonstrations in a stage that uses them."""
    answer = config.answer_demos or config.demos  # "" -> as the pattern demonstrations, before any preset
    return (config.demos == "nearest" and config.pattern_source == "llm") or config.pattern_source == "copied" or \
        (answer == "nearest" and config.reader)


def default_pool(config, dataset, embedder, family: str) -> tuple[DemoPool | None, str]:
    """(the demonstration pool or None, why): a pool when the config asks for nearest demonstrations.

    Asked explicitly (`demos="nearest"`), a dataset that cannot give them is refused (ConfigError). Asked by the
    preset's default (`demos=""`), the run uses the fixed shots where the dataset cannot give them (no training
    split, no gold chains, or a few-shot family whose relations have no wording in the prompt file), and says so."""
    from ....errors import ConfigError

    mode = requested_demos(config)
    wants = (mode == "nearest" and config.pattern_source in ("llm", "copied")) or \
        (requested_answer_demos(config) == "nearest" and config.reader)
    if not wants:
        return None, f"{mode} ({'set' if config.demos else 'the preset default'})"
    explicit = _asked_explicitly(config)
    if not explicit and family not in (load_prompt_file("simgrag_pattern.yaml").get("demonstrations") or {}):
        return None, f"fixed: the preset's nearest demonstrations have no wording for the {family!r} family"
    try:
        return pattern_demo_pool(dataset, embedder, spelling=config.demo_spelling, noise=config.demo_pool_noise,
                                 seed=config.seed), "nearest"
    except ConfigError as exc:
        if explicit:
            raise
        return None, f"fixed: the preset's nearest demonstrations are not available here ({exc})"


def pattern_demo_pool(dataset, embedder, limit: int | None = None, spelling: bool = DEMO_SPELLING,
                      noise: str = DEMO_POOL_NOISE, seed: int = 0) -> DemoPool:
    """The training questions of `dataset` that a pattern demonstration can be written from (refuses when none), and
    with `noise` (config demo_pool_noise) their rule-noise rewrites (`kgrag_utils.demos.rephrasings`; `seed`: the
    evaluated questions' noise seed, config seed)."""
    return DemoPool.from_training(dataset, embedder, usable_for_pattern, DEMO_NEED, limit=limit, spelling=spelling,
                                  noise=noise, seed=seed)


def demo_type(item: Any) -> str:
    """A training question's type for type coverage: its question type, else its gold chain."""
    qtype = getattr(item, "qtype", None)
    return str(qtype) if qtype else " > ".join(f"{r}{'' if f else '^-1'}" for r, f in (getattr(item, "chain", None) or ()))


def demo_shots(pool: DemoPool, item: Any, k: int, family: str, types: int = 1,
               margin: float = DEMO_TYPE_MARGIN, wording: dict | None = None) -> tuple[list[dict], list[float]]:
    """The `k` nearest training questions as pattern shots, nearest LAST (just before the question), and their
    similarities in the same order. `types` > 1: at least that many question types where the nearest are ambiguous
    (config demo_types, `kgrag_utils.demos.cover_types`). `wording`: config demo_wording (`merged_wording`)."""
    chosen = pool.nearest(item, k, type_of=demo_type if types > 1 else None, cover=types, margin=margin)[::-1]
    return [{**pattern_demo(d.item, family, wording), "qtype": _qtype(d.item)} for d in chosen], [d.score for d in chosen]


def _qtype(item: Any) -> str | None:
    qtype = getattr(item, "qtype", None)
    return None if qtype is None else str(qtype)


def shots_of(demos: Sequence[dict]) -> list[dict]:
    """The shots without their ids (the prompt's input)."""
    return [{k: d[k] for k in ("question", "phrases", "triples")} for d in demos]


def answer_demo(item: Any, retrieve, kg, evidence_lines, max_answers: int = 5) -> dict | None:
    """{"id", "question", "evidence", "answer"} of a training question (config answer_demos="nearest"): the evidence is
    what its gold (oracle) pattern retrieves, the answer the gold answers its subgraphs bind to the pattern's answer
    node, in evidence order; None when they bind none. Only the answer node counts: MetaQA's 3-hop gold sets often hold
    an entity that the shown evidence has only in the middle of the chain (an actor of "films that share actors with
    [X]" who also directed a film), and a shot that answers it teaches the model to answer the bridge entity.
    `retrieve(pattern)` is the method's search over the evaluated KG (MetaQA and PathQuestion use one KG for every
    split)."""
    from .pattern import validate_pattern

    check = validate_pattern(oracle_pattern(item))
    if not check.ok:
        return None
    result = retrieve(check.pattern)
    if not result.subgraphs:
        return None
    answer = check.pattern.answer
    golds = {str(a).casefold(): str(a) for a in item.answers}
    names = [str(kg.entity_names[sg.nodes[answer]]) for sg in result.subgraphs if answer in sg.nodes]
    found = list(dict.fromkeys(n for n in names if n.casefold() in golds))[:max_answers]
    if not found:
        return None
    return {"id": str(item.qid), "question": item.question, "evidence": evidence_lines(kg, result.subgraphs),
            "answer": " | ".join(found)}


def own_type_group(qtype: Any, demo_types: Sequence[Any]) -> str | None:
    """How many of a question's chosen demonstrations have its own question type: "all", "some" or "none"; None for a
    question without a type or without demonstrations (a record's `demo_own_type`)."""
    if qtype is None or not demo_types:
        return None
    same = sum(t == str(qtype) for t in demo_types)
    return "all" if same == len(demo_types) else "some" if same else "none"


def own_type_counts(rows: Sequence[tuple[Any, Sequence[Any], bool]]) -> dict:
    """Of the demonstrations chosen for each question, how many have the question's own type (MetaQA: its
    template's relation chain). `rows`: (question type, the chosen demonstrations' types, right?) per question;
    questions without a type or without demonstrations are left out. Groups: all / some / none of its type."""
    chosen = own = 0
    groups = {g: {"n": 0, "hits@1": 0} for g in ("all", "some", "none")}
    for qtype, demo_types, right in rows:
        group = own_type_group(qtype, demo_types)
        if group is None:
            continue
        chosen, own = chosen + len(demo_types), own + sum(t == str(qtype) for t in demo_types)
        groups[group]["n"] += 1
        groups[group]["hits@1"] += int(bool(right))
    return {"questions": sum(g["n"] for g in groups.values()), "demonstrations": chosen, "of_own_type": own,
            "share": round(own / chosen, 4) if chosen else None, "questions_all_own_type": groups["all"]["n"],
            "by_own_type": groups}
