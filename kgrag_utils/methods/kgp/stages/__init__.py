"""KGP's stages, one module each (the class in `../method.py` runs them):

`docsets` (a question's document set and passages), `entities` (shared entities), `similarity`, `graphs` (the
passage graph), `traversal` (the LLM-guided traversal), `demos` (nearest demonstrations), `evaluation`
(retrieval and answer metrics), `sweeps` (density and branching sweeps, no LLM).
"""
