"""What an example's view is made of: panels holding a table, a text or graphs (one vocabulary for the
widget and the static fallback, so both show the same thing).

A `Graph` is nodes and edges with roles (which colour) and hover texts (the facts); `graphs.py` draws it
with plotly (pan, zoom, hover) or matplotlib (static). Node positions may be given (`pos`), so that a
pattern and the subgraphs matched to it are drawn in the same places.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable, Sequence

__all__ = ["Node", "Edge", "Graph", "Panel", "ROLE_COLORS", "graph_from_triples", "short"]

#: node / edge role -> colour, the same in every view
ROLE_COLORS = {
    "default": "#a6cee3", "topic": "#fdbf6f", "unknown": "#cab2d6", "answer": "#b2df8a", "gold": "#fb9a99",
    "seed": "#fdbf6f", "chosen": "#33a02c", "visited": "#b2df8a", "missed": "#fb9a99", "edge": "#888888",
    "path": "#1f78b4",
}


@dataclass
class Node:
    id: str
    label: str = ""
    role: str = "default"
    hover: str = ""


@dataclass
class Edge:
    source: str
    target: str
    label: str = ""
    role: str = "edge"
    hover: str = ""


@dataclass
class Graph:
    title: str
    nodes: list[Node] = field(default_factory=list)
    edges: list[Edge] = field(default_factory=list)
    pos: dict[str, tuple[float, float]] | None = None

    def node_ids(self) -> list[str]:
        return [n.id for n in self.nodes]

    def add_node(self, id: str, label: str | None = None, role: str = "default", hover: str = "") -> None:
        """Add a node once; a later call may upgrade its role (a default node becoming an answer)."""
        for n in self.nodes:
            if n.id == id:
                if role != "default" and n.role == "default":
                    n.role = role
                if hover and not n.hover:
                    n.hover = hover
                return
        self.nodes.append(Node(id, label if label is not None else id, role, hover))

    def signature(self) -> tuple:
        """What the graph shows, for tests and for telling two views apart."""
        return (self.title, tuple((n.id, n.role) for n in self.nodes),
                tuple((e.source, e.label, e.target, e.role) for e in self.edges))


@dataclass
class Panel:
    """One block of an example's view: `kind` is "table" (a DataFrame), "text" (a string) or "graphs".

    Graph panels show their first `pinned` graphs always and one of the others at a time, picked with a
    slider named `select_label` (SimGRAG's pattern, pinned, beside subgraph k; KGP's traversal at step k).
    Without a live kernel the static figure draws the pinned graphs and those at `static_pick`."""

    title: str
    kind: str
    table: Any = None
    text: str = ""
    graphs: list[Graph] = field(default_factory=list)
    note: str = ""
    pinned: int = 0
    select_label: str = "graph"
    static_pick: list[int] = field(default_factory=list)


def short(value: Any, width: int = 120) -> str:
    """A value as one line of at most `width` characters."""
    text = " ".join(str(value).split()) if value is not None else ""
    return text if len(text) <= width else text[: width - 1] + "…"


def graph_from_triples(title: str, triples: Iterable[Sequence[str]], roles: dict[str, str] | None = None,
                       edge_roles: Sequence[str] | None = None, edge_hover: Sequence[str] | None = None,
                       node_hover: dict[str, str] | None = None) -> Graph:
    """A graph of (head, relation, tail) facts; the hover of each edge is its fact."""
    roles = roles or {}
    node_hover = node_hover or {}
    g = Graph(title)
    for i, t in enumerate(triples):
        if len(t) < 3:
            continue
        h, r, tl = (str(x) for x in t[:3])
        for n in (h, tl):
            g.add_node(n, role=roles.get(n, "default"), hover=node_hover.get(n, ""))
        hover = edge_hover[i] if edge_hover and i < len(edge_hover) else f"({h}, {r}, {tl})"
        role = edge_roles[i] if edge_roles and i < len(edge_roles) else "edge"
        g.edges.append(Edge(h, tl, r, role, hover))
    return g
