"""A small invented movie KG with templated 1/2/3-hop questions, in MetaQA's file formats.

Why: the notebooks must run on a fresh machine without the real benchmark, and the loaders must
read the sample with exactly the code that reads MetaQA. Every title, person and tag here is made
from word lists written for this module; answers come from traversing the generated KG.

Conventions copied from MetaQA's format (not its content):
* `kb.txt`: `head|relation|tail`, head always a movie; relations directed_by, written_by,
  starred_actors, release_year, in_language, has_genre, has_tags, has_imdb_rating, has_imdb_votes.
* `qa/{k}-hop/vanilla/qa_{split}.txt`: `question with [topic]<TAB>ans1|ans2`;
  `qa/{k}-hop/qa_{split}_qtype.txt`: the aligned question type (`actor_to_movie_to_director`).
* The topic entity is never its own answer and is dropped from every intermediate set after the
  first step (the films "sharing a director with [M]" exclude M), as in MetaQA's 2- and 3-hop data.
"""

from __future__ import annotations

import math
import random
from collections import defaultdict

from ..text_table import table_rows
from .metaqa import TYPE_RELATION  # the files written here are read by that module

__all__ = ["TYPE_RELATION", "QTYPES", "generate_movies", "build_movie_kb", "follow_qtype"]

_PEOPLE = ("actor", "director", "writer")
_ATTRS = ("director", "writer", "actor", "year", "language", "genre")

QTYPES: dict[int, list[str]] = {
    1: [f"movie_to_{t}" for t in ("director", "writer", "actor", "year", "language", "genre", "tags",
                                   "imdbrating", "imdbvotes")]
       + ["actor_to_movie", "director_to_movie", "writer_to_movie", "tag_to_movie"],
    2: [f"{p}_to_movie_to_{t}" for p in _PEOPLE for t in _ATTRS]
       + [f"movie_to_{p}_to_movie" for p in _PEOPLE],
    3: [f"movie_to_{p}_to_movie_to_{t}" for p in _PEOPLE for t in _ATTRS if t != p],
}

# ---------------------------------------------------------------------------------------------
# Word lists (written for this module)
# ---------------------------------------------------------------------------------------------
_TITLE_ADJ = ("Copper", "Silent", "Crimson", "Hollow", "Paper", "Velvet", "Northern", "Broken", "Quiet",
              "Glass", "Iron", "Distant", "Burning", "Frozen", "Amber", "Restless", "Salt", "Lonely",
              "Painted", "Sleeping", "Wandering", "Borrowed", "Tangled", "Crooked")
_TITLE_NOUN = ("Lantern", "Orchard", "Harbor", "Compass", "Meadow", "Signal", "Tide", "Garden", "Engine",
               "Letter", "Canyon", "Violin", "Ferry", "Mirror", "Circus", "Lighthouse", "Ledger", "Falcon",
               "Staircase", "Carousel", "Quarry", "Balcony", "Telegram", "Weathervane")
_TITLE_PLACE = ("Marrowby", "Quillford", "Ostendale", "Brackwater", "Selvin Creek", "Dunmarrow", "Tolliver Bay",
                "Hexley", "Ambersett", "Norrowgate")
_FIRST = ("Adela", "Bastian", "Corin", "Delphine", "Emrys", "Fenna", "Gideon", "Hester", "Ilario", "Jessamy",
          "Kasimir", "Liesel", "Marek", "Nerissa", "Osric", "Petra", "Quentin", "Rosalind", "Soren", "Thea",
          "Ulric", "Vesna", "Wendell", "Ximena", "Yorick", "Zelda", "Anselm", "Briony", "Cassius", "Dagny",
          "Evander", "Fiora", "Gunnar", "Honora", "Ivo", "Juno")
_LAST = ("Ardwell", "Brannock", "Castellane", "Dovrin", "Esterhall", "Farrowby", "Galloway-Pike", "Halvane",
         "Ingleby", "Jarrow", "Kestrow", "Lindqvale", "Morrigan", "Nettlefield", "Okonkwo-Ray", "Penhallow",
         "Quarrington", "Ravensdale", "Sallowmere", "Thistlewood", "Umberly", "Vantreight", "Whitlock-Oyelaran",
         "Yarborough", "Zennor")
_LANGUAGES = ("English", "French", "Spanish", "German", "Italian", "Japanese", "Korean", "Swedish", "Hindi",
              "Portuguese")
_LANGUAGE_WEIGHTS = (10, 3, 2, 2, 2, 2, 1, 1, 1, 1)
_GENRES = ("Drama", "Comedy", "Thriller", "Horror", "Action", "Romance", "Documentary", "Animation",
           "Western", "Mystery", "Science Fiction", "Adventure", "Crime", "Musical", "Fantasy", "War")
_TAG_WORDS = ("heist", "time travel", "small town", "coming of age", "slow burn", "road trip", "twist ending",
              "based on a novel", "ensemble cast", "black and white", "period piece", "revenge", "friendship",
              "island", "courtroom", "cult film", "stop motion", "ghosts", "family drama", "musicians")
_RATINGS = ("good", "bad", "average", "excellent")
_VOTES = ("famous", "well known", "little known")

# ---------------------------------------------------------------------------------------------
# Question templates: a question is (phrase describing a movie set) + (phrase asking for a type)
# ---------------------------------------------------------------------------------------------
def _phrasings(table: str) -> dict[str, tuple[str, ...]]:
    """A template table: per row, a key and its phrasings."""
    return {row[0]: row[1:] for row in table_rows(table)}


_ONE_HOP = _phrasings("""
movie_to_director   | who directed [{e}] | [{e}] was directed by whom | who is the director of [{e}]
                    | name the person who directed the film [{e}]
movie_to_writer     | who wrote [{e}] | who wrote the screenplay for [{e}] | [{e}] was written by whom
                    | which screenwriter is credited on [{e}]
movie_to_actor      | who acted in [{e}] | which actors appear in [{e}] | who is in the cast of [{e}]
                    | the film [{e}] starred which actors
movie_to_year       | when was [{e}] released | in what year did [{e}] come out | what is the release year of [{e}]
movie_to_language   | what language is [{e}] in | in which language was [{e}] made
                    | the film [{e}] is spoken in which language
movie_to_genre      | what genre is [{e}] | what kind of film is [{e}] | [{e}] belongs to which genre
movie_to_tags       | what words describe [{e}] | which tags does [{e}] have
                    | how would viewers label the film [{e}]
movie_to_imdbrating | how is [{e}] rated | what rating did [{e}] get from viewers | how well was [{e}] received
movie_to_imdbvotes  | how popular is [{e}] | how well known is the film [{e}] | how many people know [{e}]
actor_to_movie      | what films did [{e}] act in | which movies feature [{e}] | [{e}] appeared in which films
                    | in which movies does [{e}] star
director_to_movie   | which films did [{e}] direct | what movies were directed by [{e}]
                    | [{e}] is the director of which films
writer_to_movie     | which films did [{e}] write | what movies were written by [{e}]
                    | [{e}] wrote the screenplays of which films
tag_to_movie        | which films are tagged [{e}] | what movies can be described as [{e}]
                    | name films labelled [{e}]
""")

_SET_FROM_PERSON = _phrasings("""
actor    | the movies [{e}] acted in | the films starring [{e}] | the films featuring [{e}]
director | the movies directed by [{e}] | the films [{e}] directed | the films made by director [{e}]
writer   | the movies written by [{e}] | the films [{e}] wrote | the films with screenplays by [{e}]
""")
_SET_FROM_MOVIE = _phrasings("""
actor    | the films sharing an actor with [{e}] | the other movies of the cast of [{e}]
         | the films in which actors from [{e}] also appear
director | the films sharing a director with [{e}] | the other films by the director of [{e}]
         | the movies made by whoever directed [{e}]
writer   | the films sharing a writer with [{e}] | the other films by the screenwriter of [{e}]
         | the movies written by whoever wrote [{e}]
""")
_ASK = _phrasings("""
director | who directed {s} | {s} were directed by whom | name the directors of {s}
writer   | who wrote {s} | who are the screenwriters of {s} | {s} were written by whom
actor    | who acted in {s} | which actors appear in {s} | {s} starred whom
genre    | what genres are {s} | {s} belong to which genres | what kinds of films are {s}
language | what languages are {s} in | in which languages were {s} made | {s} are spoken in which languages
year     | when were {s} released | in which years did {s} come out | {s} were released in which years
""")
_CO_PERSON = _phrasings("""
actor    | who has acted alongside [{e}] | which actors shared the screen with [{e}]
         | who appeared in films together with [{e}]
director | who co-directed a film with [{e}] | which directors worked on a film together with [{e}]
         | who shared directing credit with [{e}]
writer   | who co-wrote a film with [{e}] | which writers shared a screenplay credit with [{e}]
         | who wrote films together with [{e}]
""")
_MOVIE_TO_PERSON_TO_MOVIE = _phrasings("""
actor    | which other films share an actor with [{e}] | what movies feature someone from the cast of [{e}]
         | the actors of [{e}] also appear in which films
director | what else did the director of [{e}] direct | which other films share a director with [{e}]
         | the director of [{e}] also made which films
writer   | what else did the writer of [{e}] write | which other films share a screenwriter with [{e}]
         | the screenwriter of [{e}] also wrote which films
""")


def _templates(qtype: str) -> tuple[str, ...]:
    """Paraphrase templates of a question type; `{e}` is the topic entity."""
    words = qtype.split("_to_")
    if len(words) == 2:
        return _ONE_HOP[qtype]
    if len(words) == 3:
        a, mid, b = words
        if a == "movie":
            return _MOVIE_TO_PERSON_TO_MOVIE[mid]
        if a == b:
            return _CO_PERSON[a]
        return tuple(ask.format(s=s) for s in _SET_FROM_PERSON[a] for ask in _ASK[b])
    _, p, _, b = words
    return tuple(ask.format(s=s) for s in _SET_FROM_MOVIE[p] for ask in _ASK[b])


# ---------------------------------------------------------------------------------------------
# The KG
# ---------------------------------------------------------------------------------------------
def _zipf_pick(rng: random.Random, pool: list[str], k: int, exponent: float = 0.8) -> list[str]:
    """k distinct items; earlier items of `pool` are more popular (so people recur across films)."""
    weights = [1.0 / (i + 1) ** exponent for i in range(len(pool))]
    picked: list[str] = []
    while len(picked) < k:
        item = rng.choices(pool, weights=weights)[0]
        if item not in picked:
            picked.append(item)
    return picked


def _unique_names(rng: random.Random, n: int, make) -> list[str]:
    seen: list[str] = []
    while len(seen) < n:
        name = make(rng)
        if name not in seen:
            seen.append(name)
    return seen


def _plural(noun: str) -> str:
    if noun.endswith("y") and noun[-2] not in "aeiou":
        return noun[:-1] + "ies"
    if noun.endswith(("s", "x", "ch", "sh")):
        return noun + "es"
    return noun + "s"


def _title(rng: random.Random) -> str:
    form = rng.randrange(6)
    adj, noun = rng.choice(_TITLE_ADJ), rng.choice(_TITLE_NOUN)
    if form == 0:
        return f"The {adj} {noun}"
    if form == 1:
        return f"{adj} {_plural(noun)}"
    if form == 2:
        return f"The {noun} of {rng.choice(_TITLE_PLACE)}"
    if form == 3:
        return f"{rng.choice(_TITLE_PLACE)} {noun}"
    if form == 4:
        return f"A {noun} for {rng.choice(_FIRST)}"
    return f"{adj} {noun} {rng.choice(('II', 'Returns', 'at Dawn', 'in Winter'))}"


def build_movie_kb(seed: int = 0, num_movies: int = 52) -> list[tuple[str, str, str]]:
    """Sorted unique (movie, relation, tail) facts of the invented movie world."""
    rng = random.Random(f"movies-kb-{seed}")
    titles = _unique_names(rng, num_movies, _title)
    people = _unique_names(rng, 80, lambda r: f"{r.choice(_FIRST)} {r.choice(_LAST)}")
    actors = people[:44]
    directors = people[44:60] + people[:3]  # a few actors also direct
    writers = people[60:80] + people[44:50]  # some directors write their own films
    tag_pool = list(_TAG_WORDS)
    facts: set[tuple[str, str, str]] = set()
    for movie in titles:
        directing = _zipf_pick(rng, directors, 2 if rng.random() < 0.12 else 1)
        for d in directing:
            facts.add((movie, "directed_by", d))
        n_writers = 1 + (rng.random() < 0.45)
        writing = _zipf_pick(rng, writers, n_writers)
        if rng.random() < 0.2:  # the director wrote it too
            writing = [directing[0]] + writing[:1]
        for w in writing:
            facts.add((movie, "written_by", w))
        for a in _zipf_pick(rng, actors, rng.randint(2, 4)):
            facts.add((movie, "starred_actors", a))
        facts.add((movie, "release_year", str(rng.randint(1958, 2021))))
        langs = [rng.choices(_LANGUAGES, weights=_LANGUAGE_WEIGHTS)[0]]
        if rng.random() < 0.12:
            langs.append(rng.choice(_LANGUAGES))
        for lang in langs:
            facts.add((movie, "in_language", lang))
        genres = rng.sample(_GENRES, 1 + (rng.random() < 0.5))
        for g in genres:
            facts.add((movie, "has_genre", g))
        tags = rng.sample(tag_pool, rng.randint(0, 2))
        if rng.random() < 0.25:  # a genre word reused as a tag, as viewers do
            tags.append(rng.choice(genres).lower())
        if rng.random() < 0.2:  # viewers also tag films with the director's name, lower-cased
            tags.append(directing[0].lower())
        for t in tags:
            facts.add((movie, "has_tags", t))
        if rng.random() < 0.35:
            facts.add((movie, "has_imdb_rating", rng.choice(_RATINGS)))
        if rng.random() < 0.3:
            facts.add((movie, "has_imdb_votes", rng.choice(_VOTES)))
    return sorted(facts)


# ---------------------------------------------------------------------------------------------
# Traversal
# ---------------------------------------------------------------------------------------------
def _index(facts):
    fwd: dict[tuple[str, str], set[str]] = defaultdict(set)
    bwd: dict[tuple[str, str], set[str]] = defaultdict(set)
    for h, r, t in facts:
        fwd[(h, r)].add(t)
        bwd[(t, r)].add(h)
    return fwd, bwd


def follow_qtype(index, topic: str, qtype: str) -> set[str]:
    """Answers of a question type from a topic, MetaQA's way: the topic is dropped after step 0."""
    fwd, bwd = index
    words = qtype.split("_to_")
    frontier = {topic}
    for src, dst in zip(words, words[1:]):
        nxt: set[str] = set()
        if src == "movie":
            for e in frontier:
                nxt |= fwd.get((e, TYPE_RELATION[dst]), set())
        else:
            for e in frontier:
                nxt |= bwd.get((e, TYPE_RELATION[src]), set())
        frontier = nxt - {topic}
    return frontier


def _topics(facts, qtype: str) -> list[str]:
    """Entities of the question type's start type, sorted."""
    start = qtype.split("_to_")[0]
    if start == "movie":
        return sorted({h for h, _, _ in facts})
    rel = TYPE_RELATION[start]
    return sorted({t for _, r, t in facts if r == rel})


def _questions(facts, hops: int, rng: random.Random, per_split: int, max_answers: int):
    """{split: [(line, qtype)]}: dev and test draw disjoint (qtype, topic) pairs."""
    index = _index(facts)
    qtypes = QTYPES[hops]
    pools: dict[str, list[tuple[str, list[str]]]] = {}
    for qtype in qtypes:
        pool = []
        for topic in _topics(facts, qtype):
            answers = sorted(follow_qtype(index, topic, qtype))
            if answers and len(answers) <= max_answers:
                pool.append((topic, answers))
        rng.shuffle(pool)
        pools[qtype] = pool
    quota = math.ceil(per_split / len(qtypes))
    out: dict[str, list[tuple[str, str]]] = {"dev": [], "test": []}
    for qtype in qtypes:
        pool = pools[qtype]
        n = min(quota, len(pool) // 2)
        templates = _templates(qtype)
        for split, chunk in (("dev", pool[:n]), ("test", pool[n:2 * n])):
            for topic, answers in chunk:
                text = rng.choice(templates).format(e=topic)
                out[split].append((f"{text}\t{'|'.join(answers)}", qtype))
    for split in out:
        rng.shuffle(out[split])
    return out


def generate_movies(seed: int = 0, per_split: int = 110, max_answers: int = 30) -> dict[str, str]:
    """Relative path -> file text of the movie sample (MetaQA layout under `MetaQA/`)."""
    facts = build_movie_kb(seed)
    files = {"MetaQA/kb.txt": "".join(f"{h}|{r}|{t}\n" for h, r, t in facts)}
    for hops in (1, 2, 3):
        rng = random.Random(f"movies-qa-{seed}-{hops}")
        by_split = _questions(facts, hops, rng, per_split, max_answers)
        for split, rows in by_split.items():
            files[f"MetaQA/qa/{hops}-hop/vanilla/qa_{split}.txt"] = "".join(line + "\n" for line, _ in rows)
            files[f"MetaQA/qa/{hops}-hop/qa_{split}_qtype.txt"] = "".join(q + "\n" for _, q in rows)
    return files
