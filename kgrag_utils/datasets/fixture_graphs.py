"""The knowledge-graph fixtures: FactKG (DBpedia-like facts and claims), RoG WebQSP / CWQ
(Freebase-like subgraphs with CVT ids) and WC2014 (a generated football world).

Hand-written and deterministic; `fixtures.ensure_fixture` writes them (see that module's docstring
for the layouts and why they exist).
"""

from __future__ import annotations

import io
import pickle

from ..errors import ConfigError
from ..text_table import table_rows

TYPE_RELATION = "22-rdf-syntax-ns#type"

# ----------------------------------------------------------------------------- FactKG

#: (head, relation, tail) facts of the fixture's DBpedia world, stored in both directions.
_FACTS = table_rows("""
Adam_McQuaid                  | weight     | "94802.4"
Adam_McQuaid                  | birthPlace | Cape_Breton_Island
Adam_McQuaid                  | team       | Boston_Bruins
Boston_Bruins                 | city       | Boston
Boston                        | country    | United_States
Alan_Shepard                  | birthPlace | New_Hampshire
Alan_Shepard                  | mission    | Apollo_14
Alan_Shepard                  | birthDate  | "1923-11-18"
Apollo_14                     | operator   | NASA
Apollo_14                     | crewMember | Edgar_Mitchell
Edgar_Mitchell                | birthPlace | Hereford,_Texas
Hereford,_Texas               | country    | United_States
Korea                         | language   | Korean_language
Korea                         | capital    | Seoul
Seoul                         | country    | Korea
Elliot_See                    | almaMater  | University_of_Texas_at_Austin
Elliot_See                    | deathPlace | St._Louis
University_of_Texas_at_Austin | city       | Austin,_Texas
Austin,_Texas                 | country    | United_States
""")
#: A fact stored only forward and one stored only in its reverse ('~') form.
_FORWARD_ONLY = (("NASA", "headquarter", "Washington,_D.C."),)
_REVERSE_ONLY = (("Edgar_Mitchell", "nationality", "United_States"),)
#: Facts of a relation FactKG does not use: in the full graph, not in the light one.
_FULL_ONLY = (("Adam_McQuaid", "wikiPageUsesTemplate", "Template:Infobox_ice_hockey_player"),
              ("Korea", "wikiPageUsesTemplate", "Template:Infobox_country"))
_TYPES = {
    "Adam_McQuaid": ["Person", "Athlete", "Q5"],
    "Alan_Shepard": ["Person", "Astronaut", "Q5"],
    "Edgar_Mitchell": ["Person", "Astronaut"],
    "Elliot_See": ["Person", "Astronaut"],
    "Boston_Bruins": ["SportsTeam"],
    "Boston": ["City", "Place"],
    "Seoul": ["City", "Place"],
    "Korea": ["Country", "Place"],
    "United_States": ["Country", "Place"],
    "Apollo_14": ["SpaceMission"],
    "NASA": ["Organisation"],
    "University_of_Texas_at_Austin": ["University", "Organisation"],
}


def _claim(label: bool, entities: list[str], evidence: dict | None, types: list[str]) -> dict:
    record = {"Label": [label], "Entity_set": entities}
    if evidence is not None:
        record["Evidence"] = evidence
    record["types"] = types
    return record


def _claims() -> dict[str, dict[str, dict]]:
    train = {
        # the example of FactKG's README
        "Adam McQuaid weighed 94.8024 kilograms and is from Pleasant Springs, Wisconsin.": _claim(
            False, ["Adam_McQuaid", '"94802.4"', "Pleasant_Springs,_Wisconsin"],
            {"Adam_McQuaid": [["weight"], ["placeOfBirth"]], '"94802.4"': [["~weight"]],
             "Pleasant_Springs,_Wisconsin": [["~placeOfBirth"]]},
            ["coll:model", "num2", "substitution", "multi claim"]),
        "Alan Shepard was born in New Hampshire.": _claim(
            True, ["Alan_Shepard", "New_Hampshire"],
            {"Alan_Shepard": [["birthPlace"]], "New_Hampshire": [["~birthPlace"]]}, ["written", "num1"]),
        "The capital of Korea is Seoul.": _claim(
            True, ["Korea", "Seoul"], {"Korea": [["capital"]], "Seoul": [["~capital"]]}, ["written", "num1"]),
        "A crew member of Apollo 14 was born in Hereford, Texas.": _claim(
            True, ["Apollo_14", "Hereford,_Texas"],
            {"Apollo_14": [["crewMember", "birthPlace"]], "Hereford,_Texas": [["~birthPlace", "~crewMember"]]},
            ["written", "multi hop"]),
        "Elliot See did not die in St. Louis.": _claim(
            False, ["Elliot_See", "St._Louis"], {"Elliot_See": [["deathPlace"]], "St._Louis": [["~deathPlace"]]},
            ["coll:presup", "negation", "num1"]),
        "Yeah, the Boston Bruins have a home city.": _claim(
            True, ["Boston_Bruins"], {"Boston_Bruins": [["city"]]}, ["coll:presup", "existence"]),
    }
    dev = {
        "Adam McQuaid played for the Boston Bruins.": _claim(
            True, ["Adam_McQuaid", "Boston_Bruins"], {"Adam_McQuaid": [["team"]], "Boston_Bruins": [["~team"]]},
            ["written", "num1"]),
        "Apollo 14 was operated by the European Space Agency.": _claim(
            False, ["Apollo_14", "European_Space_Agency"],
            {"Apollo_14": [["operator"]], "European_Space_Agency": [["~operator"]]},
            ["written", "num1", "substitution"]),
        "Korea's language is Korean and its capital is Seoul.": _claim(
            True, ["Korea", "Korean_language", "Seoul"],
            {"Korea": [["language"], ["capital"]], "Korean_language": [["~language"]], "Seoul": [["~capital"]]},
            ["coll:model", "num2", "multi claim"]),
    }
    test = {  # the test file carries no Evidence
        "Elliot See studied at the University of Texas at Austin.": _claim(
            True, ["Elliot_See", "University_of_Texas_at_Austin"], None, ["written", "num1"]),
        "Edgar Mitchell was born in Boston.": _claim(
            False, ["Edgar_Mitchell", "Boston"], None, ["written", "num1", "substitution"]),
        "The team Adam McQuaid played for is based in a city of the United States.": _claim(
            True, ["Adam_McQuaid", "United_States"], None, ["written", "multi hop"]),
        "Alan Shepard has a birth date.": _claim(True, ["Alan_Shepard"], None, ["coll:presup", "existence"]),
    }
    return {"train": train, "dev": dev, "test": test}


def _undirected(facts, forward_only=(), reverse_only=(), types: dict | None = None) -> dict:
    graph: dict[str, dict[str, list[str]]] = {}

    def add(e: str, r: str, n: str) -> None:
        nbrs = graph.setdefault(e, {}).setdefault(r, [])
        if n not in nbrs:
            nbrs.append(n)

    for h, r, t in facts:
        add(h, r, t)
        add(t, "~" + r, h)
    for h, r, t in forward_only:
        add(h, r, t)
    for h, r, t in reverse_only:
        add(t, "~" + r, h)
    for e, names in (types or {}).items():
        for name in names:
            add(e, TYPE_RELATION, name)
            add(name, "~" + TYPE_RELATION, e)
    return graph


def factkg_world() -> dict:
    """The fixture's facts, claims and graphs (the objects that are pickled)."""
    light = _undirected(_FACTS, _FORWARD_ONLY, _REVERSE_ONLY, _TYPES)
    full = _undirected(_FACTS + _FULL_ONLY, _FORWARD_ONLY, _REVERSE_ONLY, _TYPES)
    used = sorted({r for _, r, _ in _FACTS + _FORWARD_ONLY + _REVERSE_ONLY})
    return {"claims": _claims(), "light": light, "full": full, "relations": used,
            "facts": _FACTS + _FORWARD_ONLY + _REVERSE_ONLY, "types": _TYPES}


def _pickle(obj) -> bytes:
    return pickle.dumps(obj, protocol=4)


def generate_factkg(seed: int = 0) -> dict[str, bytes]:
    world = factkg_world()
    files = {f"FactKG/factkg_{split}.pickle": _pickle(data) for split, data in world["claims"].items()}
    files["FactKG/dbpedia_2015_undirected_light.pickle"] = _pickle(world["light"])
    files["FactKG/dbpedia_2015_undirected.pickle"] = _pickle(world["full"])
    files["FactKG/relations_for_final.pickle"] = _pickle(world["relations"])
    return files


# ----------------------------------------------------------------------------- RoG WebQSP / CWQ


def _q(qid, question, answer, q_entity, a_entity, graph) -> dict:
    return {"id": qid, "question": question, "answer": answer, "q_entity": q_entity, "a_entity": a_entity,
            "graph": [list(t) for t in graph], "choices": []}


_BIEBER = table_rows("""
Justin Bieber | people.person.sibling_s             | m.0gxnnwc
m.0gxnnwc     | people.sibling_relationship.sibling | Jaxon Bieber
m.0gxnnwc     | people.sibling_relationship.sibling | Justin Bieber
Justin Bieber | people.person.parents               | Jeremy Bieber
Jaxon Bieber  | people.person.parents               | Jeremy Bieber
Justin Bieber | people.person.gender                | Male
Jaxon Bieber  | people.person.gender                | Male
Justin Bieber | music.artist.genre                  | Pop music
""")
_BAHAMA = table_rows("""
Grand Bahama | location.location.containedby      | Bahamas
Bahamas      | location.location.contains         | Grand Bahama
Bahamas      | location.country.capital           | Nassau
Nassau       | location.location.containedby      | Bahamas
Bahamas      | location.country.official_language | English Language
""")
_POLK = table_rows("""
James K. Polk | people.person.profession                                     | Lawyer
James K. Polk | government.politician.government_positions_held              | m.04j5sk8
m.04j5sk8     | government.government_position_held.office_position_or_title | President of the United States
James K. Polk | people.person.place_of_birth                                 | Pineville
""")
_JAMAICA = table_rows("""
Jamaica  | location.country.languages_spoken  | Jamaican English
Jamaica  | location.country.languages_spoken  | Jamaican Creole English Language
Jamaica  | location.country.official_language | Jamaican English
Jamaica  | location.country.capital           | Kingston
Kingston | location.location.containedby      | Jamaica
""")
_OBAMA = table_rows("""
Barack Obama        | people.person.education         | m.02nqgmw
m.02nqgmw           | education.education.institution | Columbia University
Barack Obama        | people.person.education         | m.02nqgp6
m.02nqgp6           | education.education.institution | Harvard Law School
Barack Obama        | people.person.education         | m.0nbyhqc
m.0nbyhqc           | education.education.institution | Punahou School
Columbia University | location.location.containedby   | New York City
Harvard Law School  | location.location.containedby   | Cambridge
Barack Obama        | people.person.spouse_s          | m.02h98gq
m.02h98gq           | people.marriage.spouse          | Michelle Obama
Michelle Obama      | people.person.education         | m.02wn0g2
m.02wn0g2           | education.education.institution | Princeton University
""")
_MIDWAY = table_rows("""
Battle of Midway | time.event.locations                         | Midway Atoll
Midway Atoll     | location.location.containedby                | Pacific Ocean
Battle of Midway | military.military_conflict.combatants        | m.049y2wr
m.049y2wr        | military.military_combatant_group.combatants | Empire of Japan
Battle of Midway | time.event.start_date                        | 1942-06-04
""")


def rog_questions(kind: str) -> dict[str, list[dict]]:
    """The fixture's rows per split for kind 'webqsp' or 'cwq' (RoG's columns)."""
    if kind == "webqsp":
        return {
            "train": [
                _q("WebQTrn-0", "what is the name of justin bieber brother", ["Jaxon Bieber"], ["Justin Bieber"],
                   ["Jaxon Bieber"], _BIEBER),
                _q("WebQTrn-1", "what country is the grand bahama island in", ["Bahamas"], ["Grand Bahama"],
                   ["Bahamas"], _BAHAMA),
                _q("WebQTrn-2", "what did james k polk do before he was president", ["Lawyer", "Farmer"],
                   ["James K. Polk"], ["Lawyer", "Farmer"], _POLK),
                _q("WebQTrn-3", "what language do jamaican people speak",
                   ["Jamaican English", "Jamaican Creole English Language"], ["Jamaica"],
                   ["Jamaican English", "Jamaican Creole English Language"], _JAMAICA),
            ],
            "validation": [
                _q("WebQTrn-4", "what is the capital of the bahamas", ["Nassau"], ["Bahamas"], ["Nassau"], _BAHAMA),
            ],
            "test": [
                _q("WebQTest-0", "where did barack obama go to college",
                   ["Columbia University", "Harvard Law School"], ["Barack Obama"],
                   ["Columbia University", "Harvard Law School"], _OBAMA),
                _q("WebQTest-1", "what is the capital city of jamaica", ["Kingston"], ["Jamaica"], ["Kingston"],
                   _JAMAICA),
                _q("WebQTest-2", "who are justin bieber's parents", ["Jeremy Bieber", "Pattie Mallette"],
                   ["Justin Bieber"], ["Jeremy Bieber", "Pattie Mallette"], _BIEBER),
            ],
        }
    if kind == "cwq":
        return {
            "train": [
                _q("WebQTrn-0_2b4ec1e7f1e8b1ad5c8f7f35ee1e4f4b",
                   "What is the name of the brother of the artist whose genre is Pop music and who is Justin Bieber?",
                   ["Jaxon Bieber"], ["Justin Bieber", "Pop music"], ["Jaxon Bieber"], _BIEBER),
                _q("WebQTrn-5_6a0c1b2f84bd1f55f5bd7f3a7b5c2c1e",
                   "Where did the spouse of Barack Obama go to school?", ["Princeton University"],
                   ["Barack Obama"], ["Princeton University"], _OBAMA),
                _q("WebQTrn-6_c5e0b6d1dd2c4c4f9b2a6f8e8f3d1a77",
                   "In which ocean is the location of the Battle of Midway?", ["Pacific Ocean"],
                   ["Battle of Midway"], ["Pacific Ocean"], _MIDWAY),
            ],
            "validation": [
                _q("WebQTest-9_0e5c9c3a3f0c4e7f8b6a9d2c1b4e7f60",
                   "Who fought in the battle that started on 1942-06-04 at Midway Atoll?", ["Empire of Japan"],
                   ["Midway Atoll"], ["Empire of Japan"], _MIDWAY),
            ],
            "test": [
                _q("WebQTest-0_9d3c5c1f0ab24a7f9d47a0f1c3d1e2b3",
                   "What city is the college that Barack Obama attended located in?",
                   ["New York City", "Cambridge"], ["Barack Obama"], ["New York City", "Cambridge"], _OBAMA),
                _q("WebQTest-1_4b1f9a7e3c2d4e5f8a6b7c9d0e1f2a3b",
                   "What is the official language of the country whose capital is Kingston?", ["Jamaican English"],
                   ["Kingston"], ["Jamaican English"], _JAMAICA),
            ],
        }
    raise ConfigError(f"RoG fixture kind must be 'webqsp' or 'cwq' (got {kind!r}).")


def _parquet(rows: list[dict]) -> bytes:
    import pyarrow as pa
    import pyarrow.parquet as pq

    schema = pa.schema([
        ("id", pa.string()), ("question", pa.string()), ("answer", pa.list_(pa.string())),
        ("q_entity", pa.list_(pa.string())), ("a_entity", pa.list_(pa.string())),
        ("graph", pa.list_(pa.list_(pa.string()))), ("choices", pa.list_(pa.null())),
    ])
    table = pa.Table.from_pylist(rows, schema=schema)
    buf = io.BytesIO()
    pq.write_table(table, buf, compression="snappy")
    return buf.getvalue()


def _rog_files(kind: str, folder: str) -> dict[str, bytes]:
    return {f"{folder}/data/{split}-00000-of-00001.parquet": _parquet(rows)
            for split, rows in rog_questions(kind).items()}


def generate_webqsp(seed: int = 0) -> dict[str, bytes]:
    return _rog_files("webqsp", "RoG-webqsp")


def generate_cwq(seed: int = 0) -> dict[str, bytes]:
    return _rog_files("cwq", "RoG-cwq")



# ----------------------------------------------------------------------------- WC2014 (IRN's WorldCup2014)

_WC_COUNTRIES = ("Arvonia", "Belmora", "Corvania", "Dravik")
_WC_CLUBS = (("FC_Halvern", "Arvonia"), ("Ostrel_United", "Arvonia"), ("Real_Mosca", "Belmora"),
             ("SC_Tarvis", "Belmora"), ("Kolvo_City", "Corvania"), ("AS_Pellin", "Corvania"),
             ("Dravik_Rovers", "Dravik"), ("Nordby_FC", "Dravik"))
_WC_POSITIONS = ("Goalkeeper", "Defender", "Midfielder", "Forward")
_WC_FIRST = ("Tomas", "Ilan", "Marek", "Oren", "Pavel", "Ruben", "Sami", "Teo", "Vito", "Yann", "Aldo", "Bram")
_WC_LAST = ("KARVEL", "DUSANO", "MERRIK", "OSTAVA", "PELLAN", "RUVIK", "SANDOR", "TELLIN", "VARGO", "WENDEL",
            "ZORIC", "BALTAN")
#: phrasings of conjunctive questions per pair of relations (topics written {a} and {b}, in path order)
_WC_CONJ = {
    ("plays_position_inverse", "plays_in_club_inverse"): (
        "name a player who plays at {a} position at the club {b} ?", "who plays at position {a} for club {b} ?",
        "name a {a} at club {b} ?"),
    ("plays_position_inverse", "plays_for_country_inverse"): (
        "name a player who plays at {a} from {b} ?", "who plays at position {a} for country {b} ?",
        "which {b} footballer plays at position {a} ?"),
    ("plays_in_club_inverse", "plays_for_country_inverse"): (
        "which player in {a} is from {b} ?", "which {b} footballer plays for the club {a} ?",
        "who are the {b} players at club {a} ?"),
}
_WC_ONE_HOP = (
    ("plays_in_club", "which club does {t} play for ?"), ("plays_for_country", "which country does {t} play for ?"),
    ("plays_position", "what position does {t} play ?"), ("is_aged", "how old is {t} ?"),
    ("wears_number", "which number does {t} wear ?"),
)


def wc2014_world(seed: int = 0) -> dict:
    """A small football world in WC2014's shape: players with club, country, position, age and
    number (each stored with the `_inverse` relations WC2014.txt holds), clubs in countries."""
    import random

    rng = random.Random(seed)
    club_country = dict(_WC_CLUBS)
    players = []
    names = [f"{f}_{l}" for f, l in zip(_WC_FIRST * 4, _WC_LAST[3:] + _WC_LAST[:3] + _WC_LAST[7:] + _WC_LAST[:7]
                                        + _WC_LAST[5:] + _WC_LAST[:5] + _WC_LAST)]
    for i, name in enumerate(dict.fromkeys(names)):
        club = _WC_CLUBS[i % len(_WC_CLUBS)][0]
        # most play for their club's country, some abroad (so club and country are not redundant)
        country = club_country[club] if rng.random() < 0.7 else rng.choice(_WC_COUNTRIES)
        players.append({"name": name, "club": club, "country": country, "position": _WC_POSITIONS[(i // 3) % 4],
                        "age": str(rng.randint(19, 35)), "number": str(rng.randint(1, 23))})
    facts = []
    for c, country in _WC_CLUBS:
        facts += [(c, "is_in_country", country), (country, "is_in_country_inverse", c)]
    for pl in players:
        n = pl["name"]
        facts += [(n, "plays_in_club", pl["club"]), (pl["club"], "plays_in_club_inverse", n),
                  (n, "plays_for_country", pl["country"]), (pl["country"], "plays_for_country_inverse", n),
                  (n, "plays_position", pl["position"]), (pl["position"], "plays_position_inverse", n),
                  (n, "is_aged", pl["age"]), (n, "wears_number", pl["number"])]
    return {"players": players, "facts": facts}


def _wc_facts_field(facts, entities) -> str:
    return "///".join(f"{h}#{r}#{t}" for h, r, t in facts if h in entities)


def generate_wc2014(seed: int = 0) -> dict[str, bytes]:
    """WC2014.txt (KB) and WC-P1 / WC-P2 / WC-C question files in the released line format:
    question<TAB>answer<TAB>path<TAB>answer set 'a/b/'<TAB>facts 'h#r#t///...'; conjunctive paths
    are joined by '*', each written `topic#relation#answer#<end>#answer`."""
    world = wc2014_world(seed)
    facts, players = world["facts"], world["players"]
    kb = "".join(f"{h}\t{r}\t{t}\n" for h, r, t in facts)
    out_of: dict[tuple[str, str], list[str]] = {}
    for h, r, t in facts:
        out_of.setdefault((h, r), []).append(t)

    def line(question, answer, path, answer_set, entities):
        return "\t".join([question, answer, path, "".join(a + "/" for a in answer_set),
                          _wc_facts_field(facts, entities)]) + "\n"

    p1, p2, conj = [], [], []
    for pl in players:
        n = pl["name"]
        for rel, text in _WC_ONE_HOP:
            ans = out_of[(n, rel)]
            p1.append(line(text.format(t=n), ans[0], f"{n}#{rel}#{ans[0]}", ans, {n}))
        club = pl["club"]
        country = out_of[(club, "is_in_country")][0]
        p2.append(line(f"where is the football club that {n} plays for ?", country,
                       f"{n}#plays_in_club#{club}#is_in_country#{country}", [country], {n, club}))
    for country in _WC_COUNTRIES:
        clubs = sorted({out_of[(p, "plays_in_club")][0] for p in out_of.get((country, "plays_for_country_inverse"), [])})
        for k, text in enumerate(("name a soccer club that has a player from {t} ?", "which club has a footballer of {t} ?")):
            first = out_of[(country, "plays_for_country_inverse")][k % len(out_of[(country, "plays_for_country_inverse")])]
            club = out_of[(first, "plays_in_club")][0]
            p2.append(line(text.format(t=country), club, f"{country}#plays_for_country_inverse#{first}#plays_in_club#{club}",
                           clubs, {first}))
    topics = {"plays_position_inverse": _WC_POSITIONS, "plays_in_club_inverse": [c for c, _ in _WC_CLUBS],
              "plays_for_country_inverse": _WC_COUNTRIES}
    for (ra, rb), phrasings in _WC_CONJ.items():
        k = 0
        for a in topics[ra]:
            for b in topics[rb]:
                both = [x for x in out_of.get((a, ra), []) if x in set(out_of.get((b, rb), []))]
                if not both:
                    continue
                for text in phrasings:
                    main = both[k % len(both)]
                    k += 1
                    path = f"{a}#{ra}#{main}#<end>#{main}*{b}#{rb}#{main}#<end>#{main}"
                    conj.append(line(text.format(a=a, b=b), main, path, both, {main, a, b}))
    enc = lambda rows: "".join(rows).encode("utf-8")  # noqa: E731
    return {"WC2014/WC2014.txt": kb.encode("utf-8"), "WC2014/WC-P1.txt": enc(p1), "WC2014/WC-P2.txt": enc(p2),
            "WC2014/WC-C.txt": enc(conj)}

