"""Kinship stories generated the way CLUTRR generates them, written in CLUTRR's CSV and YAML formats.

Why: the compact-relation notebook needs kinship stories with a gold relation chain on a machine
without the real benchmark. The protocol follows CLUTRR (random family tree; a queried pair whose
relation is split, rule by rule, into a chain of story edges; one sentence per edge; sentences
shuffled), but every name, sentence template and rule below is written for this module.

The world: monogamous couples, every child has both parents in the family and shares them with
all siblings, nobody remarries, and the people of a story are distinct. Under those assumptions
every composition rule in `COMPOSITIONS` is a fact of kinship, so every derivation of a story's
chain yields the true relation (tests/test_samples.py composes every story's chain over all
bracketings and checks that each derivation gives the target). The generator itself needs no
composition: it splits the query relation into a chain, rule by rule, so the target is known.

Reading convention (CLUTRR's): an edge (A, r, B) says "B is A's r"; `target` is the relation of
the query's second person to its first.
"""

from __future__ import annotations

import csv
import io
import random
import uuid
from dataclasses import dataclass, field

import yaml

__all__ = ["RELATIONS", "SURFACE", "COMPOSITIONS", "INVERSE", "SYMMETRIC", "EDGE_RELATIONS",
           "TARGET_RELATIONS", "CSV_COLUMNS", "FamilyTree", "generate_kinship", "rules_yaml",
           "relations_yaml", "surface", "surface_to_relation"]

#: Gender-neutral relation -> (word for a male relative, word for a female relative).
SURFACE: dict[str, tuple[str, str]] = {
    "child": ("son", "daughter"),
    "inv-child": ("father", "mother"),
    "SO": ("husband", "wife"),
    "sibling": ("brother", "sister"),
    "grand": ("grandson", "granddaughter"),
    "inv-grand": ("grandfather", "grandmother"),
    "in-law": ("son-in-law", "daughter-in-law"),
    "inv-in-law": ("father-in-law", "mother-in-law"),
    "un": ("nephew", "niece"),
    "inv-un": ("uncle", "aunt"),
}
RELATIONS = list(SURFACE)
SYMMETRIC = ("sibling", "SO")
INVERSE = {"child": "inv-child", "grand": "inv-grand", "un": "inv-un", "in-law": "inv-in-law"}

#: (r1, r2) -> r: if B is A's r1 and C is B's r2, then C is A's r (in this module's world).
COMPOSITIONS: dict[tuple[str, str], str] = {
    ("child", "child"): "grand",          # a child's child is a grandchild
    ("child", "SO"): "in-law",            # a child's spouse is a child-in-law
    ("child", "sibling"): "child",        # a child's sibling is another child
    ("child", "inv-child"): "SO",         # the other parent of one's child is one's spouse
    ("inv-child", "inv-child"): "inv-grand",
    ("inv-child", "sibling"): "inv-un",   # a parent's sibling is an uncle or aunt
    ("inv-child", "child"): "sibling",    # a parent's other child is a sibling
    ("inv-child", "SO"): "inv-child",     # a parent's spouse is the other parent
    ("SO", "child"): "child",             # children are shared by the couple
    ("SO", "grand"): "grand",
    ("SO", "inv-child"): "inv-in-law",    # a spouse's parent is a parent-in-law
    ("sibling", "sibling"): "sibling",
    ("sibling", "child"): "un",           # a sibling's child is a nephew or niece
    ("sibling", "inv-child"): "inv-child",
    ("sibling", "inv-grand"): "inv-grand",
    ("grand", "sibling"): "grand",
    ("inv-grand", "SO"): "inv-grand",
    ("un", "sibling"): "un",
    ("in-law", "child"): "grand",         # a child-in-law's child is a grandchild
}

#: Relations a story sentence may state (CLUTRR's stories never state in-laws or nephews).
EDGE_RELATIONS = ("child", "inv-child", "SO", "sibling", "grand", "inv-grand", "inv-un")
#: Relations a query may ask for.
TARGET_RELATIONS = ("child", "inv-child", "sibling", "grand", "inv-grand", "in-law", "inv-in-law", "un",
                    "inv-un")

CSV_COLUMNS = ["", "id", "story", "query", "text_query", "target", "text_target", "clean_story", "proof_state",
               "f_comb", "task_name", "story_edges", "edge_types", "query_edge", "genders", "syn_story",
               "node_mapping", "task_split"]

# ---------------------------------------------------------------------------------------------
# Names and sentence templates (written for this module)
# ---------------------------------------------------------------------------------------------
_ONSETS = ("Al", "Bren", "Cal", "Dar", "El", "Fen", "Gal", "Hal", "Is", "Jor", "Kel", "Lor", "Mar", "Nel",
           "Or", "Per", "Ros", "Sal", "Tor", "Val", "Wil", "Yar", "Zan", "Ber", "Cor", "Tam", "Quen", "Ith")
_FEMALE_ENDINGS = ("a", "ina", "elle", "ora", "issa", "wen")
_MALE_ENDINGS = ("o", "an", "ric", "win", "ek", "ias")
FEMALE_NAMES = sorted({o + e for o in _ONSETS for e in _FEMALE_ENDINGS})
MALE_NAMES = sorted({o + e for o in _ONSETS for e in _MALE_ENDINGS} - set(FEMALE_NAMES))

# {a}/{b}: bracketed names of the edge's first/second person; {pa}/{pb}: their possessive
# pronouns; {w}: the relation word for b ("B is A's w").
_GENERIC = (
    "[{a}] and {pa} {w} [{b}] went hiking on Saturday.",
    "[{a}] spent the afternoon baking bread with {pa} {w}, [{b}].",
    "[{a}] asked {pa} {w} [{b}] to help carry a new sofa upstairs.",
    "[{a}] phoned {pa} {w} [{b}] to share some good news.",
)
_SPECIFIC: dict[str, tuple[str, ...]] = {
    "child": ("[{a}] picked up {pa} {w} [{b}] from swimming practice.",
              "[{a}] taught {pa} {w} [{b}] how to ride a bicycle.",
              "[{a}] cheered loudly when {pa} {w} [{b}] won the spelling contest."),
    "inv-child": ("[{a}] borrowed the car from {pa} {w}, [{b}].",
                  "[{a}] made breakfast in bed for {pa} {w} [{b}] on {pb} birthday.",
                  "[{a}] called {pa} {w} [{b}] for advice about a job offer."),
    "SO": ("[{a}] and {pa} {w} [{b}] celebrated their anniversary at a seaside inn.",
           "[{a}] surprised {pa} {w} [{b}] with tickets to a concert.",
           "[{a}] planted tomatoes in the garden with {pa} {w} [{b}]."),
    "sibling": ("[{a}] and {pa} {w} [{b}] argued over who would get the last slice of pie.",
                "[{a}] shared a bedroom with {pa} {w} [{b}] for years.",
                "[{a}] lent {pa} {w} [{b}] a warm coat for the trip."),
    "grand": ("[{a}] read a bedtime story to {pa} {w} [{b}].",
              "[{a}] took {pa} {w} [{b}] fishing at the lake.",
              "[{a}] knitted a scarf for {pa} {w} [{b}]."),
    "inv-grand": ("[{a}] spent the summer on the farm of {pa} {w}, [{b}].",
                  "[{a}] loved the stories {pa} {w} [{b}] told about the old days.",
                  "[{a}] visited {pa} {w} [{b}] every Sunday afternoon."),
    "inv-un": ("[{a}] helped {pa} {w} [{b}] repaint the garden fence.",
               "[{a}] stayed with {pa} {w} [{b}] during the winter holidays.",
               "[{a}] received a chemistry set from {pa} {w} [{b}]."),
}


def _possessive(gender: str) -> str:
    return "his" if gender == "male" else "her"


def surface(relation: str, gender: str) -> str:
    """The word for a relative of the given gender, e.g. ('inv-un', 'female') -> 'aunt'."""
    male, female = SURFACE[relation]
    return male if gender == "male" else female


def surface_to_relation() -> dict[str, str]:
    return {word: rel for rel, words in SURFACE.items() for word in words}


# ---------------------------------------------------------------------------------------------
# Family trees and the true relation between two members
# ---------------------------------------------------------------------------------------------
@dataclass
class _Person:
    pid: int
    name: str
    gender: str
    parents: tuple[int, ...] = ()
    spouse: int | None = None
    children: list[int] = field(default_factory=list)


class FamilyTree:
    """A random family: a root couple, their descendants, and the descendants' spouses."""

    def __init__(self, rng: random.Random, levels: int = 4, min_children: int = 2, max_children: int = 3,
                 p_marry: float = 0.85):
        self.people: list[_Person] = []
        female, male = list(FEMALE_NAMES), list(MALE_NAMES)
        rng.shuffle(female)
        rng.shuffle(male)
        self._pools = {"female": female, "male": male}
        couples = [self._couple(rng, self._new(rng, "male"))]
        for level in range(1, levels):
            next_couples = []
            for father, mother in couples:
                for _ in range(rng.randint(min_children, max_children)):
                    child = self._new(rng, rng.choice(("male", "female")), parents=(father, mother))
                    if level < levels - 1 and rng.random() < p_marry:
                        next_couples.append(self._couple(rng, child))
            couples = next_couples
            if not couples:
                break
        self.table = [self._relatives(a) for a in range(len(self.people))]

    def _new(self, rng, gender: str, parents: tuple[int, ...] = ()) -> int:
        pid = len(self.people)
        self.people.append(_Person(pid, self._pools[gender].pop(), gender, parents))
        for p in parents:
            self.people[p].children.append(pid)
        return pid

    def _couple(self, rng, pid: int) -> tuple[int, int]:
        person = self.people[pid]
        other = self._new(rng, "female" if person.gender == "male" else "male")
        person.spouse, self.people[other].spouse = other, pid
        return (pid, other) if person.gender == "male" else (other, pid)

    def _relatives(self, a: int) -> dict[int, str]:
        """Everyone with a word in the vocabulary for person a: {b: r} meaning "b is a's r"."""
        people = self.people
        parents = list(people[a].parents)
        children = list(people[a].children)
        siblings = [c for c in people[parents[0]].children if c != a] if parents else []
        spouse = people[a].spouse
        found: dict[int, str] = {}
        groups = (
            ("child", children),
            ("inv-child", parents),
            ("SO", [spouse] if spouse is not None else []),
            ("sibling", siblings),
            ("grand", [g for c in children for g in people[c].children]),
            ("inv-grand", [g for p in parents for g in people[p].parents]),
            ("in-law", [people[c].spouse for c in children if people[c].spouse is not None]),
            ("inv-in-law", list(people[spouse].parents) if spouse is not None else []),
            ("un", [n for s in siblings for n in people[s].children]),
            ("inv-un", [u for p in parents if people[p].parents
                        for u in people[people[p].parents[0]].children if u != p]),
        )
        for rel, members in groups:
            for b in members:
                found.setdefault(b, rel)
        return found

    def relation(self, a: int, b: int) -> str | None:
        """The relation r with "b is a's r", or None when the vocabulary has no word for it."""
        return self.table[a].get(b)

    def pairs(self, relation: str) -> list[tuple[int, int]]:
        return [(a, b) for a in range(len(self.people)) for b, r in sorted(self.table[a].items()) if r == relation]


# ---------------------------------------------------------------------------------------------
# Stories
# ---------------------------------------------------------------------------------------------
_RULES_FOR: dict[str, list[tuple[str, str]]] = {}
for (_r1, _r2), _r in sorted(COMPOSITIONS.items()):
    _RULES_FOR.setdefault(_r, []).append((_r1, _r2))


def _split_chain(fam: FamilyTree, rng: random.Random, a: int, b: int, target: str, length: int):
    """CLUTRR's backward generation: split the query edge by rules until `length` story edges.

    Returns (people along the chain, relations of its edges, proof steps) or None.
    """
    nodes, rels = [a, b], [target]
    proofs: list[tuple[tuple[int, str, int], tuple[int, str, int], tuple[int, str, int]]] = []
    while len(rels) < length:
        used = set(nodes)
        options = []
        for i, r in enumerate(rels):
            for r1, r2 in _RULES_FOR.get(r, ()):
                for c in range(len(fam.people)):
                    if c in used or fam.relation(nodes[i], c) != r1 or fam.relation(c, nodes[i + 1]) != r2:
                        continue
                    new = rels[:i] + [r1, r2] + rels[i + 1:]
                    pending = sum(x not in EDGE_RELATIONS for x in new)
                    if len(new) + pending <= length:  # every non-edge relation still needs a split
                        options.append((i, r1, r2, c))
        if not options:
            return None
        i, r1, r2, c = rng.choice(options)
        proofs.append(((nodes[i], rels[i], nodes[i + 1]), (nodes[i], r1, c), (c, r2, nodes[i + 1])))
        nodes = nodes[:i + 1] + [c] + nodes[i + 1:]
        rels = rels[:i] + [r1, r2] + rels[i + 1:]
    if any(r not in EDGE_RELATIONS for r in rels):
        return None
    return nodes, rels, proofs


def _sentence(rng: random.Random, fam: FamilyTree, a: int, b: int, relation: str, generic_only: bool = False) -> str:
    pa, pb = fam.people[a], fam.people[b]
    specific = _SPECIFIC.get(relation, ())
    pool = specific if specific and not generic_only and rng.random() < 0.7 else _GENERIC
    return rng.choice(pool).format(a=pa.name, b=pb.name, pa=_possessive(pa.gender), pb=_possessive(pb.gender),
                                   w=surface(relation, pb.gender))


def _story_row(rng: random.Random, length: int, split: str, index: int) -> dict[str, str]:
    """One CSV row of a story whose chain has `length` edges (retries until one is found)."""
    while True:
        fam = FamilyTree(rng)
        target = rng.choice(TARGET_RELATIONS)
        pairs = fam.pairs(target)
        if not pairs:
            continue
        a, b = rng.choice(pairs)
        found = _split_chain(fam, rng, a, b, target, length)
        if found is not None:
            break
    nodes, rels, proofs = found
    people = fam.people

    def word(rel: str, pid: int) -> str:
        return surface(rel, people[pid].gender)

    def named(step):
        x, r, y = step
        return (people[x].name, word(r, y), people[y].name)

    sentences = [_sentence(rng, fam, x, y, r) for x, y, r in zip(nodes, nodes[1:], rels)]
    shuffled = list(sentences)
    rng.shuffle(shuffled)
    edge_words = [word(r, y) for r, y in zip(rels, nodes[1:])]
    target_word = word(target, b)
    proof_state = [{named(head): [named(left), named(right)]} for head, left, right in proofs]
    return {
        "": str(index),
        "id": str(uuid.UUID(int=rng.getrandbits(128), version=4)),
        "story": " ".join(shuffled),
        "query": repr((people[a].name, people[b].name)),
        "text_query": "",
        "target": target_word,
        "text_target": repr([_sentence(rng, fam, a, b, target, generic_only=True)]),
        "clean_story": " ".join(sentences),
        "proof_state": repr(proof_state),
        "f_comb": "-".join(edge_words),
        "task_name": f"task_1.{length}",
        "story_edges": repr([(i, i + 1) for i in range(length)]),
        "edge_types": repr(edge_words),
        "query_edge": repr((0, length)),
        "genders": ",".join(f"{people[p].name}:{people[p].gender}" for p in nodes),
        "syn_story": "",
        "node_mapping": repr({p: i for i, p in enumerate(nodes)}),
        "task_split": split,
    }


def _csv(rows: list[dict[str, str]]) -> str:
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=CSV_COLUMNS, lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    return buf.getvalue()


def rules_yaml() -> str:
    """rules_store.yaml in CLUTRR's schema (symmetric / inverse-equivalence / compositional)."""
    compositional: dict[str, dict[str, str]] = {}
    for (r1, r2), r in COMPOSITIONS.items():
        compositional.setdefault(r1, {})[r2] = r
    doc = {
        "symmetric": {"family": {r: r for r in SYMMETRIC}},
        "equivalence": {"family": {}},
        "inverse-equivalence": {"family": dict(INVERSE)},
        "compositional": {"family": compositional},
        "relation_types": ["family"],
    }
    header = ("# Kinship composition rules of the generated sample (written for this project).\n"
              "# compositional: family: r1: {r2: r} means (A, r1, B) and (B, r2, C) give (A, r, C),\n"
              "# where (A, r, B) reads 'B is the r of A'.\n")
    return header + yaml.safe_dump(doc, sort_keys=False, default_flow_style=False)


def relations_yaml() -> str:
    """relations_store.yaml in CLUTRR's schema: relation -> gender -> {rel: word, p: [patterns]}."""
    patterns = ("e_2 is e_1's {w}", "e_1 has a {w} called e_2", "the {w} of e_1 is e_2")
    doc = {}
    for rel, (male, female) in SURFACE.items():
        doc[rel] = {g: {"rel": w, "p": [p.format(w=w) for p in patterns]}
                    for g, w in (("male", male), ("female", female))}
    header = "# Relation vocabulary of the generated sample: gendered words and sentence patterns.\n"
    return header + yaml.safe_dump(doc, sort_keys=False, default_flow_style=False)


def generate_kinship(seed: int = 0, train_per_length: int = 75, test_per_length: int = 30) -> dict[str, str]:
    """Relative path -> file text of the kinship sample (CLUTRR layout under `CLUTRR/`)."""
    files: dict[str, str] = {}
    rng = random.Random(f"kinship-train-{seed}")
    rows = [_story_row(rng, length, "train", 0) for length in (2, 3) for _ in range(train_per_length)]
    rng.shuffle(rows)
    for i, row in enumerate(rows):
        row[""] = str(i)
    files["CLUTRR/data_sample/2,3_train.csv"] = _csv(rows)
    for length in (2, 3, 4, 5, 6):
        rng = random.Random(f"kinship-test-{seed}-{length}")
        rows = [_story_row(rng, length, "test", i) for i in range(test_per_length)]
        files[f"CLUTRR/data_sample/{length}_test.csv"] = _csv(rows)
    files["CLUTRR/clutrr_store/rules_store.yaml"] = rules_yaml()
    files["CLUTRR/clutrr_store/relations_store.yaml"] = relations_yaml()
    return files
