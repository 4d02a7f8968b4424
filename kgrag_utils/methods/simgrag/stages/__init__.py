"""SimGRAG's stages, one module each (the class in `../method.py` runs them):

`pattern` (pattern graphs, parser, validation), `oracle` (gold patterns from chains), `gsd_search` (filtering,
ordering, enumeration with an admissible bound; `gsd_enumerate`, `gsd_plan`, `gsd_kernel`: the compiled loop),
`scale_retriever` (out-of-core retrieval over a disk KG), `type_candidates` (entity-type candidates for patterns
without a named entity), `generate` (evidence lines, answer and verdict parsers), `demos` (nearest
demonstrations), `samples` (self-consistency), `steps` (the stages over a batch), `replay` (a fake LLM replaying
gold patterns: plumbing only).
"""
