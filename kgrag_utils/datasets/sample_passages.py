"""A small invented multi-document corpus with bridge and comparison questions, in MuSiQue's format.

Why: the passage-retrieval notebooks (vector retrieval + rerank, KGP) need a corpus, questions
with gold supporting passages and OpenIE-style triples on a machine without the real benchmark.
One set of invented facts (provinces, towns, people, films, novels, companies) is rendered both as
passage text and as triples, so every triple is true to its passage by construction.

Files (HippoRAG/MuSiQue layout):
* `sample_questions.json`: [{id, question, answer, answer_aliases, answerable, type,
  question_decomposition: [{id, question, answer, paragraph_support_idx}],
  paragraphs: [{idx, title, paragraph_text, is_supporting}]}], 10 paragraphs per question;
* `sample_corpus.json`: [{title, text}] (every question paragraph is in it, same title and text);
* `sample_openie.json`: {"docs": [{idx, title, text, passage, extracted_entities,
  extracted_triples}], ...} in corpus order, `passage` = title + newline + text.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass, field

from ..text_table import table_rows

__all__ = ["generate_passages", "build_world", "PARAGRAPHS_PER_QUESTION"]

PARAGRAPHS_PER_QUESTION = 10
_LAST_YEAR = 2024

# ---------------------------------------------------------------------------------------------
# Word lists (written for this module)
# ---------------------------------------------------------------------------------------------
_PROVINCES = ("Aveland", "Korrowmark", "Estria Vale", "Halden Reach", "Murrowen", "Sunmere")
_RIVERS = ("Tolle", "Brannan", "Oskeld", "Velder", "Quarrow", "Linnet", "Ambrel")
_TOWN_HEAD = ("Dun", "Marl", "Ost", "Brack", "Quill", "Hav", "Ember", "Wend", "Fal", "Yew", "Coldr", "Pell",
              "Ash", "Tarn")
_TOWN_TAIL = ("mere", "ford", "by", "wick", "stead", "holt", "bridge", "port", "thorpe")
_TOWN_PRODUCE = ("woollen cloth", "cider", "clockmaking", "blue pottery", "salt", "horse fairs", "lacework",
                 "smoked fish", "slate quarries", "glassblowing")
_FIRST = ("Agathe", "Bertil", "Cosima", "Dorian", "Elowen", "Florian", "Greta", "Hallam", "Imke", "Jasper",
          "Katarin", "Leopold", "Mireille", "Nikolai", "Ottilie", "Pascal", "Rhiannon", "Sebastian", "Tove",
          "Valentin", "Wilhelmina", "Zoltan")
_LAST = ("Ambrose-Vell", "Brisbourne", "Corvalis", "Drummelow", "Eskerby", "Fairweather-Lund", "Grimsholt",
         "Hollingrake", "Istvanek", "Jessop-Marr", "Kittering", "Loxley-Brand", "Merriweather", "Nollenbeck",
         "Ostrander", "Pellingham", "Quayle-Dunn", "Rookwood", "Silverthorne", "Tremayne-Hale")
_FILM_ADJ = ("Lamplit", "Harbor", "Winter", "Paper", "Iron", "Hidden", "Seventh", "Drifting", "Scarlet", "Long",
             "Hollow", "Brass", "Northbound", "Quiet", "Feathered")
_FILM_NOUN = ("Orchard", "Boats", "Crossing", "Signal", "Masquerade", "Tides", "Lantern", "Frontier", "Echo",
              "Procession", "Harvest", "Reverie")
_FILM_GENRES = ("drama", "comedy", "thriller", "western", "musical", "mystery film", "war film")
_NOVEL_FORMS = ("The {n} of {t}", "A {n} in {t}", "The Last {n}", "{n}s at Dusk", "Letters from the {n}")
_NOVEL_NOUNS = ("Cartographer", "Bellringer", "Ferryman", "Glassmaker", "Beekeeper", "Lamplighter", "Weaver",
                "Archivist", "Clockmaker", "Harbourmaster")
_COMPANY_HEAD = ("Halvane", "Corbel", "Mistral", "Northgate", "Bellweather", "Ostrova", "Kingsreach",
                 "Palladine", "Greyfen", "Lumen", "Starling", "Vantage")
_INDUSTRIES = (("Instruments", "precision instruments"), ("Ceramics", "ceramics"), ("Shipping", "shipping"),
               ("Textiles", "textile"), ("Foods", "food processing"), ("Motors", "automotive"),
               ("Optics", "optics"), ("Press", "publishing"), ("Rail", "railway engineering"),
               ("Pharma", "pharmaceutical"))


@dataclass
class _Doc:
    """One passage: its title, sentences and the triples those sentences state."""

    title: str
    kind: str
    sentences: list[str] = field(default_factory=list)
    triples: list[tuple[str, str, str]] = field(default_factory=list)

    @property
    def text(self) -> str:
        return " ".join(self.sentences)


def _unique(rng: random.Random, n: int, make, taken: set[str]) -> list[str]:
    out: list[str] = []
    while len(out) < n:
        name = make(rng)
        if name not in taken:
            taken.add(name)
            out.append(name)
    return out


def build_world(seed: int = 0) -> dict:
    """The invented facts: provinces, towns, people, films, novels and companies (plain dicts)."""
    rng = random.Random(f"passages-world-{seed}")
    taken: set[str] = set(_PROVINCES) | set(_RIVERS)
    towns = _unique(rng, 14, lambda r: r.choice(_TOWN_HEAD) + r.choice(_TOWN_TAIL), taken)
    town = {}
    founded = rng.sample(range(1090, 1790), len(towns))
    population = rng.sample(range(2_000, 90_000, 100), len(towns))
    for i, t in enumerate(towns):
        town[t] = {"province": _PROVINCES[i % len(_PROVINCES)], "river": rng.choice(_RIVERS),
                   "founded": founded[i], "population": population[i], "known_for": rng.choice(_TOWN_PRODUCE)}
    province = {p: {"capital": next(t for t in towns if town[t]["province"] == p)} for p in _PROVINCES}
    # distinct first names, surnames, title words and company names, so no two entities read alike
    people_names = [f"{a} {b}" for a, b in zip(rng.sample(_FIRST, 18), rng.sample(_LAST, 18))]
    roles = ["film director"] * 7 + ["novelist"] * 5 + ["industrialist"] * 6
    births = rng.sample(range(1840, 1985), len(people_names))
    person = {p: {"occupation": roles[i], "born_in": rng.choice(towns), "born": births[i]}
              for i, p in enumerate(people_names)}
    by_role = {r: [p for p in people_names if person[p]["occupation"] == r] for r in sorted(set(roles))}
    film = {}
    film_titles = [f"{a} {n}" for a, n in zip(rng.sample(_FILM_ADJ, 12), rng.sample(_FILM_NOUN, 12))]
    for title in film_titles:
        director = rng.choice(by_role["film director"])
        film[title] = {"director": director, "filmed_in": rng.choice(towns), "genre": rng.choice(_FILM_GENRES),
                       "released": min(person[director]["born"] + rng.randint(28, 60), _LAST_YEAR)}
    novel = {}
    novel_titles = [rng.choice(_NOVEL_FORMS).format(n=n, t=rng.choice(towns)) for n in rng.sample(_NOVEL_NOUNS, 8)]
    for title in novel_titles:
        author = rng.choice(by_role["novelist"])
        novel[title] = {"author": author, "set_in": rng.choice(towns),
                        "published": min(person[author]["born"] + rng.randint(25, 55), _LAST_YEAR)}
    company = {}
    company_names = [f"{h} {rng.choice(_INDUSTRIES)[0]}" for h in rng.sample(_COMPANY_HEAD, 10)]
    for name in company_names:
        founder = rng.choice(by_role["industrialist"])
        industry = dict(_INDUSTRIES)[name.split(" ", 1)[1]]
        company[name] = {"founder": founder, "industry": industry, "headquarters": rng.choice(towns),
                         "founded": min(person[founder]["born"] + rng.randint(24, 45), _LAST_YEAR)}
    return {"town": town, "province": province, "person": person, "film": film, "novel": novel,
            "company": company}


def _article(word: str) -> str:
    return "an" if word[0].lower() in "aeiou" else "a"


def _documents(world: dict, rng: random.Random) -> list[_Doc]:
    """One passage per entity; each sentence comes with the triples it states."""
    docs: list[_Doc] = []
    for p, f in world["province"].items():
        d = _Doc(p, "province")
        d.sentences.append(f"{p} is a province whose capital is {f['capital']}.")
        d.triples.append((p, "capital", f["capital"]))
        towns = sorted(t for t, tf in world["town"].items() if tf["province"] == p and t != f["capital"])
        if towns:
            d.sentences.append(f"Other towns of {p} include {', '.join(towns)}.")
            d.triples += [(t, "located in", p) for t in towns]
        docs.append(d)
    for t, f in world["town"].items():
        d = _Doc(t, "town")
        d.sentences.append(rng.choice((
            f"{t} is a town in the province of {f['province']}, on the banks of the {f['river']} river.",
            f"{t} is a market town in {f['province']} that lies on the {f['river']} river.")))
        d.triples += [(t, "located in", f["province"]), (t, "lies on", f["river"])]
        pop = _fmt("population", f["population"])
        d.sentences.append(f"It was founded in {f['founded']} and has a population of about {pop}.")
        d.triples += [(t, "founded in", str(f["founded"])), (t, "population", _fmt("population", f["population"]))]
        d.sentences.append(f"The town is known for its {f['known_for']}.")
        d.triples.append((t, "known for", f["known_for"]))
        docs.append(d)
    for p, f in world["person"].items():
        d = _Doc(p, "person")
        occ = f["occupation"]
        d.sentences.append(rng.choice((
            f"{p} (born {f['born']}) is {_article(occ)} {occ} from {f['born_in']}.",
            f"{p} was born in {f['born_in']} in {f['born']} and became {_article(occ)} {occ}.")))
        d.triples += [(p, "born in", f["born_in"]), (p, "born in year", str(f["born"])), (p, "occupation", occ)]
        docs.append(d)
    for title, f in world["film"].items():
        d = _Doc(title, "film")
        d.sentences.append(f"{title} is a {f['released']} {f['genre']} directed by {f['director']}.")
        d.triples += [(title, "released in", str(f["released"])), (title, "genre", f["genre"]),
                      (title, "directed by", f["director"])]
        d.sentences.append(rng.choice((f"It was filmed on location in {f['filmed_in']}.",
                                       f"Most of its scenes were shot in {f['filmed_in']}.")))
        d.triples.append((title, "filmed in", f["filmed_in"]))
        docs.append(d)
    for title, f in world["novel"].items():
        d = _Doc(title, "novel")
        d.sentences.append(f"{title} is a novel by {f['author']}, first published in {f['published']}.")
        d.triples += [(title, "written by", f["author"]), (title, "published in", str(f["published"]))]
        d.sentences.append(f"The story is set in {f['set_in']}.")
        d.triples.append((title, "set in", f["set_in"]))
        docs.append(d)
    for name, f in world["company"].items():
        d = _Doc(name, "company")
        d.sentences.append(f"{name} is {_article(f['industry'])} {f['industry']} company founded in {f['founded']} "
                           f"by {f['founder']}.")
        d.triples += [(name, "industry", f["industry"]), (name, "founded in", str(f["founded"])),
                      (name, "founded by", f["founder"])]
        d.sentences.append(f"Its headquarters are in {f['headquarters']}.")
        d.triples.append((name, "headquarters in", f["headquarters"]))
        docs.append(d)
    rng.shuffle(docs)
    return docs


# Bridge questions: kind of first entity | attribute leading to the bridge entity | its kind | attribute
# of the bridge entity that is the answer | question | first sub-question | second sub-question.
_BRIDGES = table_rows("""
film    | director     | person | born_in  | Where was the director of {x} born?
        | Who directed {x}? | Where was #1 born?
company | founder      | person | born     | In what year was the founder of {x} born?
        | Who founded {x}? | When was #1 born?
novel   | author       | person | born_in  | In which town was the author of {x} born?
        | Who wrote {x}? | Where was #1 born?
company | headquarters | town   | province | In which province are the headquarters of {x}?
        | Where are the headquarters of {x}? | In which province is #1?
film    | filmed_in    | town   | river    | Which river flows through the town where {x} was filmed?
        | Where was {x} filmed? | Which river flows through #1?
person  | born_in      | town   | founded  | When was the birthplace of {x} founded?
        | Where was {x} born? | When was #1 founded?
novel   | set_in       | town   | province | In which province is the town where {x} is set?
        | Where is {x} set? | In which province is #1?
""")
# Comparison questions: kind | attribute | question | sub-question | which value wins (the smaller or the larger).
_COMPARISONS = tuple((kind, attr, q, sq, wins == "larger") for kind, attr, q, sq, wins in table_rows("""
company | founded    | Which company was founded first, {x} or {y}? | When was {x} founded?        | smaller
person  | born       | Who was born first, {x} or {y}?              | When was {x} born?           | smaller
film    | released   | Which film came out earlier, {x} or {y}?     | When was {x} released?       | smaller
town    | founded    | Which town is older, {x} or {y}?             | When was {x} founded?        | smaller
town    | population | Which town has more inhabitants, {x} or {y}? | How many people live in {x}? | larger
"""))


def _fmt(attr: str, value) -> str:
    """A value as the passages write it (populations with thousands separators)."""
    return f"{value:,}" if attr == "population" else str(value)


def _aliases(world: dict, kind: str, answer: str) -> list[str]:
    if kind == "person":
        first, last = answer.split(" ", 1)
        return [f"{first[0]}. {last}"]
    if kind == "river":
        return [f"{answer} river", f"River {answer}"]
    if kind == "town":
        return [f"{answer}, {world['town'][answer]['province']}"]
    return []


def _paragraphs(rng: random.Random, docs: list[_Doc], support: list[str]) -> tuple[list[dict], dict[str, int]]:
    """Supporting passages plus distractors (half of the same kinds as the supporting ones), shuffled."""
    by_title = {d.title: d for d in docs}
    kinds = {by_title[t].kind for t in support}
    rest = [d.title for d in docs if d.title not in support]
    similar = [t for t in rest if by_title[t].kind in kinds]
    n_distract = PARAGRAPHS_PER_QUESTION - len(support)
    chosen = rng.sample(similar, min(len(similar), n_distract // 2))
    others = [t for t in rest if t not in chosen]
    chosen += rng.sample(others, n_distract - len(chosen))
    titles = list(support) + chosen
    rng.shuffle(titles)
    paragraphs = [{"idx": i, "title": t, "paragraph_text": by_title[t].text, "is_supporting": t in support}
                  for i, t in enumerate(titles)]
    return paragraphs, {t: i for i, t in enumerate(titles)}


def _questions(world: dict, docs: list[_Doc], rng: random.Random, n_bridge: int, n_comparison: int) -> list[dict]:
    out: list[dict] = []
    sub_id = iter(range(1001, 100_000))
    bridge_pool = [(b, x) for b in _BRIDGES for x in sorted(world[b[0]])]
    rng.shuffle(bridge_pool)
    per_type = -(-n_bridge // len(_BRIDGES))
    counts: dict[str, int] = {}
    picked = []
    for b, x in bridge_pool:
        if counts.get(b[4], 0) < per_type and len(picked) < n_bridge:
            counts[b[4]] = counts.get(b[4], 0) + 1
            picked.append((b, x))
    for (kind, attr, bkind, battr, q, q1, q2), x in picked:
        bridge = world[kind][x][attr]
        answer = world[bkind][bridge][battr]
        answer_kind = {"born_in": "town", "province": "province", "river": "river"}.get(battr, "value")
        paragraphs, where = _paragraphs(rng, docs, [x, bridge])
        i1, i2 = next(sub_id), next(sub_id)
        out.append({
            "id": f"2hop__{i1}_{i2}",
            "type": "bridge",
            "question": q.format(x=x),
            "answer": _fmt(battr, answer),
            "answer_aliases": _aliases(world, answer_kind, _fmt(battr, answer)),
            "answerable": True,
            "question_decomposition": [
                {"id": i1, "question": q1.format(x=x), "answer": bridge, "paragraph_support_idx": where[x]},
                {"id": i2, "question": q2, "answer": _fmt(battr, answer), "paragraph_support_idx": where[bridge]},
            ],
            "paragraphs": paragraphs,
        })
    per_cmp = -(-n_comparison // len(_COMPARISONS))
    made = 0
    for kind, attr, q, sq, larger in _COMPARISONS:
        names = sorted(world[kind])
        pairs = [(a, b) for i, a in enumerate(names) for b in names[i + 1:]
                 if world[kind][a][attr] != world[kind][b][attr]]
        for a, b in rng.sample(pairs, per_cmp):
            if made >= n_comparison:
                break
            made += 1
            if rng.random() < 0.5:
                a, b = b, a
            va, vb = world[kind][a][attr], world[kind][b][attr]
            answer = (a if va > vb else b) if larger else (a if va < vb else b)
            paragraphs, where = _paragraphs(rng, docs, [a, b])
            i1, i2 = next(sub_id), next(sub_id)
            out.append({
                "id": f"comparison__{i1}_{i2}",
                "type": "comparison",
                "question": q.format(x=a, y=b),
                "answer": answer,
                "answer_aliases": _aliases(world, kind, answer),
                "answerable": True,
                "question_decomposition": [
                    {"id": i1, "question": sq.format(x=a), "answer": _fmt(attr, va), "paragraph_support_idx": where[a]},
                    {"id": i2, "question": sq.format(x=b), "answer": _fmt(attr, vb), "paragraph_support_idx": where[b]},
                ],
                "paragraphs": paragraphs,
            })
    rng.shuffle(out)
    return out


def _dump(obj) -> str:
    return json.dumps(obj, ensure_ascii=False) + "\n"


def generate_passages(seed: int = 0, n_bridge: int = 28, n_comparison: int = 12) -> dict[str, str]:
    """Relative path -> file text of the passage sample (under `SamplePassages/`)."""
    world = build_world(seed)
    rng = random.Random(f"passages-text-{seed}")
    docs = _documents(world, rng)
    questions = _questions(world, docs, rng, n_bridge, n_comparison)
    corpus = [{"title": d.title, "text": d.text} for d in docs]
    entities = [sorted({x for s, _, o in d.triples for x in (s, o)}) for d in docs]
    all_ents = [e for ents in entities for e in ents]
    openie = {
        "docs": [{"idx": i, "title": d.title, "text": d.text, "passage": f"{d.title}\n{d.text}",
                  "extracted_entities": ents, "extracted_triples": [list(t) for t in d.triples]}
                 for i, (d, ents) in enumerate(zip(docs, entities))],
        "ents_by_doc": [],
        "avg_ent_chars": round(sum(len(e) for e in all_ents) / len(all_ents), 4),
        "avg_ent_words": round(sum(len(e.split()) for e in all_ents) / len(all_ents), 4),
        "current_cost": 0.0,
        "approx_total_cost": 0.0,
    }
    return {
        "SamplePassages/sample_questions.json": _dump(questions),
        "SamplePassages/sample_corpus.json": _dump(corpus),
        "SamplePassages/sample_openie.json": _dump(openie),
    }
