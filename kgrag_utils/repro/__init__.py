"""Reproductions: one config per result table (`configs/reproduce/<table>.yaml`), one command (`kgrag repro`).

- `spec`: the config (the table's runs, its sample defined once, its rows and cells) and its checks;
- `plan`: the runs named and parameterised as a grid, checked before anything starts, executed by the grid
  runner (`kgrag_utils.runner.grid`: fresh kernels, resume, shards, workers);
- `cost`: LLM seconds per call measured on this machine, for the estimate `--list` prints;
- `listing`: `kgrag repro --list`;
- `table`: the table from the run records' stored score rows, written, published and checked;
- `analysis`: the tables of kind paired and by_group, read from the runs' per-question outcomes;
- `book`: the static site of the executed reproduction notebooks (`make book`);
- `bench_tables`: the docs' tables that are not run records, read from the benchmarks' JSON (`kgrag tables`);
- `blocks`: the generated blocks of the docs between marker comments, written and read for both kinds of table;
- `command`: `kgrag repro` (the CLI's parser adds its arguments; nothing heavy is imported until it runs).
"""
