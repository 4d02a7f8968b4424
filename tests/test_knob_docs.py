"""Each knob documented once: the comment after a config field is what its notebook's parameters cell shows
(kgrag_utils/methods/knob_docs.py; `kgrag params` rewrites the cells, `kgrag params --check` says which differ)."""

from __future__ import annotations

import pytest

from kgrag_utils.cli import main
from kgrag_utils.errors import ConfigError
from kgrag_utils.methods import methods
from kgrag_utils.methods.knob_docs import field_comments, synced_parameters_source

METHODS = methods("method")


@pytest.mark.parametrize("spec", METHODS, ids=[s.name for s in METHODS])
def test_the_parameters_cell_shows_each_config_fields_own_comment(spec):
    """Fails when a notebook's comment of a config field differs from the config's: edit the config, then run
    `kgrag params`."""
    from kgrag_utils.methods.knob_docs import sync_parameters_cell

    assert sync_parameters_cell(spec.notebook, spec.config_class), f"{spec.notebook}: run `kgrag params`"
    comments = field_comments(spec.config_class)
    assert {"dataset", "limit", "llm_preset"} <= set(comments)  # shared knobs documented in the base or redeclared


def test_field_comments_take_the_subclass_comment_and_continuation_lines():
    from kgrag_utils.methods.simgrag import SimGRAGConfig
    from kgrag_utils.methods.vector_rerank import VectorRerankConfig

    sg = field_comments(SimGRAGConfig)
    assert sg["limit"] == ["questions evaluated (a seeded sample); 0: all"]  # SimGRAG's own, not the base's
    assert sg["llm_backend"][0].startswith('"": the preset')  # the base's
    assert len(field_comments(VectorRerankConfig)["dataset"]) == 3  # a comment continued on the lines below


def test_synced_source_replaces_only_config_fields_comments_and_keeps_the_rest():
    cell = ('dataset = "a"     # old words\n'
            '                  # old continuation\n'
            'run_name = ""     # the notebook\'s own\n'
            'limit = 3\n'
            '# a section comment\n'
            'shots = [1, 2]    # old')
    comments = {"dataset": ["new words", "second line"], "limit": ["how many"], "shots": ["examples"]}
    assert synced_parameters_source(cell, comments) == (
        'dataset = "a"     # new words\n'
        '                  # second line\n'
        'run_name = ""     # the notebook\'s own\n'
        'limit = 3         # how many\n'
        '# a section comment\n'
        'shots = [1, 2]    # examples')
    with pytest.raises(ConfigError, match="papermill"):
        synced_parameters_source(cell, {"limit": ["0 = all"]})


def test_kgrag_params_check_passes_on_the_committed_notebooks(capsys):
    assert main(["params", "--check"]) == 0 and capsys.readouterr().out == ""
