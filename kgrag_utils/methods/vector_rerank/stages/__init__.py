"""Vector rerank's stages, one module each (the class in `../method.py` runs them):

`graph_index` (entity / relation / passage collections, relation -> passages), `corpus` (released triples or
OpenIE, `build_index`), `openie` (triples for corpora without them), `query_entities` (LLM parse + lexical
fallback), `expansion` (degree-d expansion, the similarity cap), `steps` (the retrieval stages of a question),
`rerank` (robust id mapping), `samples` (the rerank call and its vote), `demos` (nearest demonstrations), `kgqa`
(KG question datasets: the KG's facts are the unit, Hits@1).
"""
