"""KGP's published numbers (Wang et al., AAAI 2024), to print beside ours - never instead of ours.

Table 1: answer F1 with a ChatGPT reader over 30 retrieved passages, per-question document sets
of 12 Wikipedia documents (294-1,121 passages), 500 dev questions per dataset (IIRC 477).
Table 2: the traversal agent ablation (F1) with the same reader.
"""

from __future__ import annotations

__all__ = ["PAPER", "TABLE1_F1", "TABLE2_AGENT_F1", "PAPER_SETUP", "OUR_METRICS", "published_frame", "rows"]

PAPER_SETUP = ("published: ChatGPT reader, 30 passages, 12-document sets (TAGME graph for KGP), "
               "SQuAD F1 (x100), ~500 dev questions per dataset")

#: method -> {dataset: F1}
TABLE1_F1 = {
    "TF-IDF": {"hotpotqa": 64.64, "iirc": 40.80, "2wiki": 44.50, "musique": 32.50},
    "DPR": {"hotpotqa": 62.11, "iirc": 41.85, "2wiki": 51.10, "musique": 31.64},
    "MDR": {"hotpotqa": 65.16, "iirc": 43.47, "2wiki": 52.44, "musique": 37.03},
    "IRCoT": {"hotpotqa": 64.12, "iirc": 41.65, "2wiki": 50.17, "musique": 34.21},
    "KGP-T5": {"hotpotqa": 66.77, "iirc": 41.54, "2wiki": 53.50, "musique": 41.19},
}

#: traversal agent -> {dataset: F1}
TABLE2_AGENT_F1 = {
    "TF-IDF heuristic": {"hotpotqa": 63.1, "2wiki": 46.0, "musique": 32.9},
    "MDR": {"hotpotqa": 65.8, "2wiki": 51.3, "musique": 41.1},
    "ChatGPT": {"hotpotqa": 66.6, "2wiki": 49.4, "musique": 38.7},
    "LLaMA-7B": {"hotpotqa": 66.3, "2wiki": 52.5, "musique": 40.0},
    "T5-Large": {"hotpotqa": 66.8, "2wiki": 53.5, "musique": 41.2},
}

#: the paper's numbers (the name every method's published.py gives them): its two tables by name
PAPER = {"table 1 (F1)": TABLE1_F1, "table 2, traversal agents (F1)": TABLE2_AGENT_F1}


def published_frame(table: dict):
    """A published table as a DataFrame (rows = methods, columns = datasets), labelled as published."""
    import pandas as pd

    df = pd.DataFrame(table).T
    df.index.name = "published (F1 x100)"
    return df


#: our metrics that sit beside the paper's F1
OUR_METRICS = ("f1", "em", "recall@5")


def rows() -> list[dict]:
    """Table 1 as long-form rows (fractions), each with its source."""
    return [{"method": "kgp", "system": system, "dataset": ds, "metric": "f1", "value": v / 100, "source": PAPER_SETUP}
            for system, cells in TABLE1_F1.items() for ds, v in cells.items()]
