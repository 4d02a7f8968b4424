"""Small stand-ins in the released formats of the real datasets (MetaQA, PathQuestion), a line writer, and
the `data_root` fixture (an empty data folder, the integrity check of real copies turned off): shared by the
dataset tests (test_datasets.py, test_datasets_passages.py, test_datasets_download.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

KB_LINES = [
    "Big|directed_by|Penny Marshall",
    "Big|starred_actors|Tom Hanks",
    "Big|release_year|1988",
    "Splash|starred_actors|Tom Hanks",
    "Splash|directed_by|Ron Howard",
    "Apollo 13|starred_actors|Tom Hanks",
    "Apollo 13|directed_by|Ron Howard",
    "Apollo 13|release_year|1995",
    "Cocoon|directed_by|Ron Howard",
    "Cocoon|has_genre|Drama",
    "Awakenings|directed_by|Penny Marshall",
    "Awakenings|has_genre|Drama",
]

QA_2HOP = [
    # 0: answerable along the chain; the second answer differs from the KB name in case and spacing
    "which person directed the movies starred by [Tom Hanks]\tPenny Marshall|ron  HOWARD",
    # 1: one gold answer is not in the KB at all
    "which person directed the movies starred by [Tom Hanks]\tPenny Marshall|Steven Spielberg",
    # 2: topic not in the KB
    "which person directed the movies starred by [Meg Ryan]\tNora Ephron",
    # 3: answerable along the chain
    "the films acted by [Tom Hanks] were released in which years\t1988|1995",
    # 4: Ron Howard is 2 undirected hops from Tom Hanks, but not along actor->movie->genre:
    #    chain False, k-hop True
    "what genres are the movies starred by [Tom Hanks]\tRon Howard",
]
QTYPE_2HOP = ["actor_to_movie_to_director", "actor_to_movie_to_director", "actor_to_movie_to_director",
              "actor_to_movie_to_year", "actor_to_movie_to_genre"]


def write_lines(path: Path, lines: list[str]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def empty_data_folder(tmp_path: Path, monkeypatch) -> Path:
    """An empty data folder (and a cache folder) beside the test, in the environment."""
    root = tmp_path / "data"
    root.mkdir()
    monkeypatch.setenv("KGRAG_DATA_DIR", str(root))
    monkeypatch.setenv("KGRAG_CACHE_DIR", str(tmp_path / "cache"))
    return root


@pytest.fixture
def data_root(tmp_path, monkeypatch) -> Path:
    root = empty_data_folder(tmp_path, monkeypatch)
    # the files these tests write are small stand-ins in the released formats, not the released files:
    # the loaders are tested here, the integrity check of real copies in tests/test_integrity.py
    from kgrag_utils.datasets import registry

    monkeypatch.setattr(registry, "verify_dataset", lambda spec, accept_changes=False: [])
    return root


#: PathQuestion lines and KB as released
PQ_LINES = [
    "what is the nation of x_a 's couple ?\tuk(uk/)\tx_a#spouse#x_b#nationality#uk#<end>#uk",
    "is x_c 's offspring a man or a woman ?\tfemale(male/female/)\tx_c#children#x_d#gender#female#<end>#female",
    "who is x_a 's couple 's child ?\tx_e(x_e/)\tx_a#spouse#x_b#children#x_e#<end>#x_e",
]
PQ_KB = ["x_a\tspouse\tx_b", "x_b\tnationality\tuk", "x_c\tchildren\tx_d", "x_c\tchildren\tx_f",
         "x_d\tgender\tfemale", "x_f\tgender\tmale", "x_b\tchildren\tx_g"]
