"""Compact relation selection's stages, one module each (the class in `../method.py` runs them):

`fit` (relation knowledge fitted on the training split; threshold and gate on its validation part: `splits`),
`knowledge` (chains and the knowledge interface), `rules` (kinship rules), `lexicon` (the lift lexicon), `knn` (the
kNN vote), `hybrid`, `graphs` (one KG per question), `checks` (derivability and consistency), `context` (compact and
top-k contexts), `conjunctive` (several chains meeting at the answer), `gate`, `derive` (the derivation of a
record), `statistics`, `chain_eval` (the notebook's chain evaluation), `spelling`, `tokens` (prompt-token counts).
"""
