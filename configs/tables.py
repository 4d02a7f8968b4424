"""The tables of docs/ that are not a method's run records, declared: each cell read from benchmarks/results/*.json.

A config, not code that measures: `kgrag tables` (kgrag_utils/repro/bench_tables.py, which loads this file) writes
them between their markers and `kgrag tables --check` (tests/test_results_tables.py) fails when a committed one
differs from its JSON. How to declare a table, and the cell templates: kgrag_utils/repro/bench_tables.py.
"""

from __future__ import annotations

import re
from typing import Any, Callable

from kgrag_utils.repro.bench_tables import Row, Rows, Table, Value, fmt, joined, lookup, results_dir, scaled
from kgrag_utils.repro.bench_tables import load as _load


# ----------------------------------------------------------------------------- the tables
TABLES: list[Table | Value] = []
RES = "docs/RESULTS.md"
HOPS = (("1", "1-hop"), ("2", "2-hop"), ("3", "3-hop"))


def _ms(stem: str, part: str, what: str = "median") -> str:
    return f"{{simgrag_{stem}.json#ms_per_query/{part}_cpu/{what}:.2f}}"


TABLES += [
    Table("simgrag-oracle-latency", RES, ("walks allowed (injective)",) + tuple(n for _, n in HOPS), [
        Row(None, "vector search (1 pattern node), HNSW, median", *(_ms(f"metaqa-{h}hop", "vector_search") for h, _ in HOPS)),
        Row(None, "vector search (1 pattern node), flat, median",
            *(_ms(f"metaqa-{h}hop_flat", "vector_search") for h, _ in HOPS)),
        Row(None, "enumeration, median / p95", *(
            f"{_ms(f'metaqa-{h}hop', 'enumeration')} / {_ms(f'metaqa-{h}hop', 'enumeration', 'p95')} "
            f"({_ms(f'metaqa-{h}hop_injective', 'enumeration')} / {_ms(f'metaqa-{h}hop_injective', 'enumeration', 'p95')})"
            for h, _ in HOPS)),
        Row(None, "retrieval total (search + relations + enumeration), median", *(
            f"{_ms(f'metaqa-{h}hop', 'retrieval_total')} ({_ms(f'metaqa-{h}hop_injective', 'retrieval_total')})"
            for h, _ in HOPS)),
    ]),
]



_IVF, _HNSW = "indexes/ivf", "indexes/hnsw"
TABLES += [
    Table("simgrag-node-search", RES, ("index", "build", "per-node search, median / p95", "found"), [
        Row("simgrag_node_search_1M.json", "exact flat", "{indexes/flat/build_s:.0f} s",
            "{indexes/flat/single_query_ms/median:.1f} / {indexes/flat/single_query_ms/p95:.1f} ms",
            "{indexes/flat/source_entity_found:%.0f}%"),
        Row("simgrag_node_search_1M.json", f"FAISS IVF, {{{_IVF}/options/nlist}} lists, nprobe 8 / 16 / 32 / 64",
            f"{{{_IVF}/build_s:.0f}} s",
            " / ".join(f"{{{_IVF}/nprobe_sweep/{p}/single_query_ms/median:.2f}}" for p in (8, 16, 32, 64))
            + " ms (medians)",
            " / ".join(f"{{{_IVF}/nprobe_sweep/{p}/source_entity_found:%.1f~}}" for p in (8, 16, 32, 64)) + "%"),
        Row("simgrag_node_search_1M.json",
            f"FAISS HNSW, M {{{_HNSW}/options/hnsw_m}}, efConstruction {{{_HNSW}/options/ef_construction}}, "
            "efSearch 32 / 64 / 128", f"{{{_HNSW}/build_s:.0f}} s",
            " / ".join(f"{{{_HNSW}/ef_search_sweep/{e}/single_query_ms/median:.2f}}" for e in (32, 64, 128))
            + " ms (medians)",
            " / ".join(f"{{{_HNSW}/ef_search_sweep/{e}/source_entity_found:%.0f}}" for e in (32, 64, 128)) + "%"),
        Row("simgrag_node_search_1M.json", "Milvus Lite, {milvus_lite/kind}, on the first 200k vectors only",
            "{milvus_lite/build_s_including_first_search:.0f} s (insert, index, first search)",
            "{milvus_lite/single_query_ms/median:.1f} / {milvus_lite/single_query_ms/p95:.1f} ms",
            "{milvus_lite/source_entity_found:%.0f}%"),
    ]),
]


def _minutes(path: str) -> Callable[[Any], str]:
    """A cell: seconds at `path`, bold, with minutes and seconds (348.2 -> **348.2 (5 min 48 s)**)."""
    def cell(data: Any) -> str:
        s = float(lookup(data, path, path))
        return f"**{fmt(s, '.1f')} ({int(s // 60)} min {int(round(s % 60))} s)**"
    return cell


def _setup_cells(kind: str) -> dict[str, Any]:
    r, ph = f"runs/[kind={kind}]", f"runs/[kind={kind}]/setup/phases"
    nbs = ", ".join(f"{{{r}/demo/notebooks/{i}/seconds:.1f}}" for i in range(6))
    return {"venv": f"{{{ph}/0/wall_s:.1f}}", "pip": f"{{{ph}/1/wall_s:.1f}}", "torch": f"{{{ph}/2/wall_s:.1f}}",
            "setup": f"**{{{r}/setup/wall_s:.1f}}** (CPU {{{r}/setup/cpu_s:.1f}})",
            "extras": f"{{{ph}/4/wall_s:.1f}} + {{{ph}/5/wall_s:.1f}}", "notebooks": nbs,
            "demo": f"**{{{r}/demo/wall_s:.1f}}**", "total": _minutes(f"{r}/make_demo_total_s")}


_COLD, _WARM = _setup_cells("cold"), _setup_cells("warm")
_P3C, _P3W = "runs/[kind=cold]/setup/phases/3", "runs/[kind=warm]/setup/phases/3"
TABLES += [
    Table("setup-time", "docs/REPRODUCIBILITY.md", ("phase (seconds)", "cold", "warm"), [
        Row("cold_setup.json", "venv", _COLD["venv"], _WARM["venv"]),
        Row("cold_setup.json", "`pip install --upgrade pip`", _COLD["pip"], _WARM["pip"]),
        Row("cold_setup.json", "torch 2.13.0 (CPU)", _COLD["torch"], _WARM["torch"]),
        Row("cold_setup.json", "`pip install -e .[extras]`",
            f"{{{_P3C}/wall_s:.1f}}: resolve + download {{{_P3C}/resolve_download_s:.1f}}, build wheels "
            f"{{{_P3C}/build_wheels_s:.1f}} (llama-cpp-python {{{_P3C}/wheel_build_s/llama-cpp-python:.1f}}), "
            f"install {{{_P3C}/install_s:.1f}}",
            f"{{{_P3W}/wall_s:.1f}}: {{{_P3W}/resolve_download_s:.1f}}, {{{_P3W}/build_wheels_s:.1f}}, "
            f"{{{_P3W}/install_s:.1f}}"),
        Row("cold_setup.json", "packaged SmolLM2, Jupyter kernel", _COLD["extras"], _WARM["extras"]),
        Row("cold_setup.json", "**`make setup`**", _COLD["setup"], _WARM["setup"]),
        Row("cold_setup.json", "notebooks: quickstart, SimGRAG, compact, vector rerank, KGP, report",
            _COLD["notebooks"], _WARM["notebooks"]),
        Row("cold_setup.json", "**`make demo` after setup** ({runs/[kind=cold]/demo/ok} notebooks, "
            "{runs/[kind=cold]/demo/failed} failed)", _COLD["demo"], _WARM["demo"]),
        Row("cold_setup.json", "**fresh clone to finished demo**", _COLD["total"], _WARM["total"]),
    ]),
]


_LAT, _EMB, _IDX = "latency", "embedding", "index"
_LLM = "results/[backend={b}]"
TABLES += [
    Table("performance", RES, ("what (script; JSON in benchmarks/results/)", "measured"), [
        Row("kg_scale_10M.json", "KG build from ids: synthetic power-law KG, {build/num_edges:,} edges, "
            "{build/num_relations} relations (`kg_scale.py`; `kg_scale_10M.json`)",
            joined("{build/from_ids_s:.1f} s, peak RSS ", scaled("build/peak_rss_mb_after_build", 1 / 1024, ".1f"),
                  " GB (", scaled("bytes/arrays_total", 1e-6, ".0f"), " MB of id arrays and indexes)")),
        Row("kg_scale_10M.json", "KG queries on that KG (random starts; chains from random walks)",
            joined("neighbour lookup median ", "{latency/neighbors_out_all_relations/median_us:.0f} µs; 3-step chain "
                  "median {latency/follow_chain_3_steps/median_us:.0f} µs (p95 ",
                  scaled("latency/follow_chain_3_steps/p95_us", 1e-3, ".1f"), " ms); .npz reload "
                  "{text_load/npz_load_s:.2f} s")),
        Row("kg_scale_10M.json", "MetaQA KB load ({metaqa/num_edges:,} facts)", "{metaqa/load_s:.2f} s"),
        Row("embed_index_before_milvus_flush.json",
            "Embeddings + index: {n_names:,} MetaQA entity names, MiniLM (`embed_index.py`; "
            "`embed_index_before_milvus_flush.json`, started {started_at})",
            "cold encoding {embedding/cold_texts_per_s:.0f} names/s; a full cache hit "
            "{embedding/cache_hit_fresh_process/encode_s:.1f} s in a fresh process without loading the model; FAISS "
            "flat single query {index/faiss_flat/single_query/median_ms:.1f} ms median, HNSW "
            "{index/faiss_hnsw/single_query/median_ms:.2f} ms at recall@10 {index/faiss_hnsw/recall_at_10_vs_exact:.3f}"),
        Row("embed_index.json", "the same, rerun under other jobs' load (`embed_index.json`, started {started_at})",
            "cold encoding {embedding/cold_texts_per_s:.0f} names/s; cache hit in a fresh process "
            "{embedding/cache_hit_fresh_process/encode_s:.1f} s; FAISS flat "
            "{index/faiss_flat/single_query/median_ms:.1f} ms, HNSW {index/faiss_hnsw/single_query/median_ms:.2f} ms "
            "at recall@10 {index/faiss_hnsw/recall_at_10_vs_exact:.3f}"),
        Row("llm_qwen2.5-coder-0.5b.json", "LLM load and decode, Qwen2.5-Coder-0.5B (`llm_throughput.py`; "
            "`llm_qwen2.5-coder-0.5b.json`, load average {" + _LLM.format(b="hf") + "/loadavg_1min_start_end/0:.0f}"
            "-{" + _LLM.format(b="llamacpp") + "/loadavg_1min_start_end/1:.0f} on 2 cores: compare, do not quote)",
            "llama.cpp loads in {" + _LLM.format(b="llamacpp") + "/load_s:.1f} s with {" + _LLM.format(b="llamacpp")
            + "/peak_rss_mb:.0f} MB peak RSS, transformers fp32 in {" + _LLM.format(b="hf") + "/load_s:.0f} s with "
            "{" + _LLM.format(b="hf") + "/peak_rss_mb:,.0f} MB; decode {" + _LLM.format(b="llamacpp")
            + "/decode_tokens_per_s:.2f} vs {" + _LLM.format(b="hf") + "/decode_tokens_per_s:.2f} tokens/s under "
            "the same load"),
    ]),
]


TABLES += [
    Table("kgp-iirc-published", "docs/REPRODUCIBILITY.md", ("*published* system (Table 1)", "IIRC F1"), [
        Row(None, system, f"*{{@kgp.TABLE1_F1/{system}/iirc:.2f}}*") for system in ("KGP-T5", "TF-IDF", "MDR")]),
]


_CP = "@compact.PAPER"
TABLES += [
    Table("compact-webqsp-published", "docs/REPRODUCIBILITY.md", ("figure", "*published* WebQSP", "*published* CWQ"), [
        Row(None, "facts per compact context", f"*{{{_CP}/facts_per_context/WebQSP:.1f}}*",
            f"*{{{_CP}/facts_per_context/CWQ:.1f}}*"),
        Row(None, "EM gain of the compact context over the top-100 facts",
            f"*+{{{_CP}/em_gain_over_100_facts/WebQSP:.1f}}* (*{{{_CP}/em_gain_over_100_facts/per_llm_range/0:.1f}}* "
            f"to *{{{_CP}/em_gain_over_100_facts/per_llm_range/1:.1f}}* per LLM)", "–"),
        Row(None, "derived answer's precision when the derivability check passes",
            f"*{{{_CP}/derived_precision_when_derivable/WebQSP:.1f}}%*",
            f"*{{{_CP}/derived_precision_when_derivable/CWQ:.1f}}%*"),
        Row(None, "... with exactly one derived answer (share of questions)",
            f"*{{{_CP}/derived_precision_one_answer/WebQSP:.1f}}%* (*{{{_CP}/coverage_one_answer/WebQSP:.1f}}%*)",
            f"*{{{_CP}/derived_precision_one_answer/CWQ:.1f}}%* (*{{{_CP}/coverage_one_answer/CWQ:.1f}}%*)"),
        Row(None, "test questions whose gold chain was seen in training",
            f"*{{{_CP}/gold_chain_seen_in_training/WebQSP:.1f}}%*", "–"),
        Row(None, "derivability check passes", "–", f"*{{{_CP}/derivability_passes/CWQ:.1f}}%*"),
    ]),
]


def _saving(data: Any) -> str:
    """A cell: how much less compile CPU the Makefile's options take than no options (percent)."""
    cpu = {b["variant"]: b["cpu_s"] for b in data["builds"]}
    return fmt(1 - cpu["makefile"] / cpu["default"], "%.0f")


_B = "builds/[variant={v}]"
TABLES += [
    Table("llama-cpp-build", "docs/REPRODUCIBILITY.md",
          ("llama-cpp-python build (`llama_cpp_build.json`)", "CPU s", "compile steps", "wheel MB"), [
              Row("llama_cpp_build.json", label, f"{{{_B.format(v=v)}/cpu_s:.1f}}", f"{{{_B.format(v=v)}/steps}}",
                  f"{{{_B.format(v=v)}/wheel_mb:.1f}}")
              for v, label in (("default", "no options (plain `pip install llama-cpp-python`)"),
                               ("no_mtmd", "without the multimodal library"), ("makefile", "the Makefile's options"))]),
    Value("llama-cpp-build-saving", "docs/REPRODUCIBILITY.md", "llama_cpp_build.json", _saving),
]


_SYN = "indexes/{i}/ms_per_query/{p}"
TABLES += [
    Value("sg-syn-ivf-median", RES, "simgrag_synthetic_10M.json", "{" + _SYN.format(i="ivf", p="retrieval_total/median") + ":.1f}"),
    Value("sg-syn-ivf-p95", RES, "simgrag_synthetic_10M.json", "{" + _SYN.format(i="ivf", p="retrieval_total/p95") + ":.1f}"),
    Value("sg-syn-nlist", RES, "simgrag_synthetic_10M.json", "{params/nlist}"),
    Value("sg-syn-nprobe", RES, "simgrag_synthetic_10M.json", "{params/nprobe}"),
    Value("sg-syn-start-found", RES, "simgrag_synthetic_10M.json", "{indexes/ivf/start_entity_in_candidates:%.1f}"),
    Value("sg-syn-flat-median", RES, "simgrag_synthetic_10M.json", "{" + _SYN.format(i="flat", p="retrieval_total/median") + ":.1f}"),
    Value("sg-syn-flat-p95", RES, "simgrag_synthetic_10M.json", "{" + _SYN.format(i="flat", p="retrieval_total/p95") + ":.1f}"),
    Value("sg-syn-enum-ivf", RES, "simgrag_synthetic_10M.json", "{" + _SYN.format(i="ivf", p="enumeration/median") + ":.2f}"),
    Value("sg-syn-enum-flat", RES, "simgrag_synthetic_10M.json", "{" + _SYN.format(i="flat", p="enumeration/median") + ":.2f}"),
]


TABLES += [Value("sg-1hop-node-ms", RES, "simgrag_metaqa-1hop.json", "{batched_node_search_ms_per_node:.2f}")]


# the run explorer on 1,000-example runs built from each method's records (benchmarks/explore_speed.py)
TABLES += [
    Table("explore-speed", "docs/EXPLORE.md",
          ("run (1,000 examples)", "examples.jsonl", "open", "filter (worst of 3)", "one record",
           "widget step median / p90 / max", "steps under 0.5 s", "compare two runs (changed)"), [
              Rows("explore_speed.json", "runs", "{method}", "{file_mb:.1f} MB", "{open_s:.2f} s",
                   lambda r: f"{max(r['filter_s'].values()):.3f} s", "{record_read/max_s:.3f} s (max)",
                   "{widget_step/p50_s:.2f} / {widget_step/p90_s:.2f} / {widget_step/max_s:.2f} s",
                   "{widget_step/under_target} of {widget_step/n}", "{compare_s:.2f} s ({compare_changed})"),
          ]),
    Value("explore-speed-load", "docs/EXPLORE.md", "explore_speed.json",
          "load average {machine/loadavg_start/0} to {machine/loadavg_end/0} on {machine/cpu_count} cores; the "
          "widget stack's first use in a process (imports, plotly's validators) {widget_stack_first_use_s:.1f} s"),
]


# docs/SCALE.md (issue 25): the enumeration against the SimGRAG reference, the out-of-core scale runs
_ENUM, _ENUM3K = "simgrag_enumeration_vs_reference.json", "simgrag_enumeration_vs_reference_3000.json"


def _enum_row(hop: str) -> Row:
    h = f"hops/{hop}hop"
    return Row(_ENUM, f"{hop}-hop", f"{{{h}/n}}", f"{{{h}/ours_dfs_median_ms:.4f}} / {{{h}/ours_dfs_p95_ms:.4f}}",
               f"{{{h}/ours_median_ms:.4f}} / {{{h}/ours_p95_ms:.4f}}",
               f"{{{h}/ref_median_ms:.4f}} / {{{h}/ref_p95_ms:.4f}}",
               f"**{{{h}/speedup_dfs_median:.1f}}x** / **{{{h}/speedup_dfs_p95:.1f}}x**",
               f"{{{h}/speedup_median:.2f}}x / {{{h}/speedup_p95:.2f}}x",
               f"{{{h}/hits@1_ours:.2f}} / {{{h}/hits@1_ref:.2f}}",
               f"{{{h}/same_topk_gsd:%.1f}}%")


def _enum3k_row(hop: str) -> Row:
    h = f"hops/{hop}hop"
    return Row(_ENUM3K, f"{hop}-hop", f"{{{h}/n}}", f"{{{h}/hits@1_ours:.2f}} / {{{h}/hits@1_ref:.2f}}")


def _scale_row(file: str) -> Row:
    return Row(file, "{edges:,}", "{entities:,}", "{peak_rss_gb:.1f}", "{build_s:,.0f}",
               "{retrieval_ms_median:.1f} / {retrieval_ms_p95:.1f}",
               "{retrieval_cpu_ms_median:.1f} / {retrieval_cpu_ms_p95:.1f}",
               "{planted_hit_rate:%.1f}% (n {n_questions})",
               "{planted_hit_rate_subset_compressed:%.1f}% / {planted_hit_rate_subset_exact:%.1f}% (n {n_exact_subset})",
               "{stages/retrieval_nprobe16/load_average_start/0}")


_100M = "kg_scale_100M.json"


def _stage_row(stage: str) -> Row:
    return Row(_100M, stage, f"{{stages/{stage}/s:,.0f}}", f"{{stages/{stage}/peak_rss_gb:.1f}}")


def _gb_per_entity(data: Any) -> float:
    """Index bytes per entity, as the 1M run's compressed index measured them, in GB."""
    return 1e-9 * lookup(_load(results_dir(), "kg_scale_out_of_core_1M.json"), "stages/index/bytes_per_vector", "1M run")


def _sizing_row(label: str, factor: float) -> Row:
    return Row(_100M, label, scaled("edges", factor, ",.0f"), scaled("entities", factor, ",.0f"),
               scaled("bytes_on_disk/kg", 1e-9 * factor, ",.1f"),
               lambda data: fmt(data["entities"] * factor * _gb_per_entity(data), ",.1f"))


TABLES += [
    Table("simgrag-enumeration", "docs/SCALE.md",
          ("MetaQA oracle patterns", "n", "ours: DFS ms (median / p95)", "ours: full call ms (median / p95)",
           "reference: DFS ms (median / p95)", "speed-up, DFS vs DFS", "speed-up, our full call vs its DFS",
           "Hits@1 ours / reference", "same top-k GSD"), [_enum_row(h) for h in ("1", "2", "3")]),
    Table("simgrag-enumeration-3000", "docs/SCALE.md",
          ("MetaQA oracle patterns, 3,000 per hop (one run per side)", "n", "Hits@1 ours / reference"),
          [_enum3k_row(h) for h in ("1", "2", "3")]),
    Value("enum3k-commit", "docs/SCALE.md", _ENUM3K, "{commit}"),
    Value("enum-load-before", "docs/SCALE.md", _ENUM, "{machine/load_average_before/0}"),
    Value("enum-load-after", "docs/SCALE.md", _ENUM, "{machine/load_average_after/0}"),
    Value("enum-commit", "docs/SCALE.md", _ENUM, "{commit}"),
    Table("kg-scale-out-of-core", "docs/SCALE.md",
          ("edges", "entities", "peak RSS GB", "build s", "retrieval ms, wall (median / p95)",
           "retrieval ms, CPU (median / p95)", "planted-answer hit rate", "subset: compressed / exact search",
           "load at start"),
          [_scale_row("kg_scale_out_of_core_1M.json"), _scale_row(_100M)]),
    Table("kg-scale-100M-build", "docs/SCALE.md", ("100M-edge build: stage", "seconds", "peak RSS GB"),
          [_stage_row("facts"), _stage_row("incidence"), _stage_row("index"),
           _stage_row("retrieval_nprobe16"), _stage_row("exact")]),
    Value("scale-100M-train", "docs/SCALE.md", _100M, "{stages/index/train_s:,.0f}"),
    Value("scale-100M-add", "docs/SCALE.md", _100M, "{stages/index/add_s:,.0f}"),
    Value("scale-100M-vs-exact", "docs/SCALE.md", _100M, "{hit_rate_vs_exact:%.1f}%"),
    Table("kg-scale-sizing", "docs/SCALE.md",
          ("KG (1,000 relations, 5 facts per entity)", "edges", "entities", "facts + incidence on disk, GB",
           "compressed entity index (OPQ+IVF+PQ48), GB"),
          [_sizing_row("measured: the 100M build's files", 1.0), _sizing_row("10x, linear", 10.0),
           _sizing_row("100x, linear", 100.0)]),
]


# ----------------------------------------------------------------------------- the peers (docs/PEERS.md)
PEERS_DOC = "docs/PEERS.md"


def _peer_pct(key: str) -> Callable[[dict], str]:
    """A peers.json score with its 95% interval, in percent: '62.2 [52.9, 70.6]'."""
    def cell(r: dict) -> str:
        ci = r.get(f"{key}_ci95")
        value = r["ours" if key == "ours" else "peer_score"]
        return f"{100 * value:.1f}" + (f" [{100 * ci[0]:.1f}, {100 * ci[1]:.1f}]" if ci else "")
    return cell


def _trace_recall(subset: str) -> Callable[[dict], str]:
    """'50.9 / 61.6': a naive-trace row's Recall@2 / @5 in percent ('-' where the lists do not cover the subset)."""
    def cell(r: dict) -> str:
        got = [r.get(f"{subset}_recall@{k}") for k in (2, 5)]
        return " / ".join("-" if v is None else f"{100 * v:.1f}" for v in got)
    return cell


def _peer_diff(r: dict) -> str:
    d = r["difference"]
    ci = d.get("ci95")
    return f"{100 * d['mean']:+.1f}" + (f" [{100 * ci[0]:+.1f}, {100 * ci[1]:+.1f}]" if ci else "")


def _peer_rows(peer: str, *label_cells, file: str = "peers.json") -> Rows:
    return Rows(file, "rows", *label_cells, "{metric}", _peer_pct("ours"), _peer_pct("peer"), _peer_diff,
                "{n}", where=lambda r: r["peer"] == peer)


_PEER_COLS = ("metric", "ours [95%]", "peer [95%]", "ours - peer [95%, paired]", "n")


def _ours_simgrag(r: dict) -> str:
    """The SimGRAG row's own setting, short: 'nearest 8 after 4 fixed, schema, anchor'."""
    v = r["ours_variant"]
    demos = re.search(r"demos=nearest \((\d+) chosen after (\d+) fixed\)", v)
    shots = f"nearest {demos[1]} after {demos[2]} fixed" if demos else "fixed " + (re.search(r"shots=(\d+)", v) or ["", "?"])[1]
    return ", ".join([shots, *(["schema"] if "structured=schema" in v else []), *(["anchor"] if "anchor_entity=True" in v else [])])


def _readme_peer_row(r: dict) -> bool:
    """README's rows: SimGRAG's strict Hits@1 on all questions; KGP's recall@30 on the entity graph and flat TF-IDF."""
    if r["peer"] == "simgrag-ref":
        return r["metric"] == "hits@1 (strict)" and r.get("subset") == "all"
    if r["peer"] == "vector-graph-rag":
        return r["metric"] == "recall@5"
    return r["peer"] == "kgp-ref" and r["metric"] == "recall@30" and ("entity graph" in r["ours_variant"]
                                                                      or r["ours_variant"].startswith("TF-IDF"))


_README_PEER = {"simgrag-ref": "SimGRAG: pattern graph + GSD answers MetaQA (YZ-Cai/SimGRAG: its MetaQA pipeline, the 1.5B)",
                "kgp-ref": "KGP: graph traversal beats flat retrieval (KG-LLM-MDQA, no-LLM retrievers)",
                "vector-graph-rag": "Graph + LLM rerank beats naive retrieval (vector-graph-rag 0.4.0, the 1.5B)"}
TABLES += [
    Table("peers-readme", "README.md", ("claim (authors' code)", "dataset", "ours", "metric", "ours [95%]",
                                        "authors' code [95%]", "ours - theirs [95%, paired]", "n"),
          [Rows("peers.json", "rows", lambda r: _README_PEER[r["peer"]], lambda r: r["dataset"].split(" (")[0],
                lambda r: _ours_simgrag(r) if r["peer"] == "simgrag-ref" else r["ours_variant"].split(" (")[0],
                "{metric}", _peer_pct("ours"), _peer_pct("peer"), _peer_diff, "{n}", where=_readme_peer_row)]),
]
TABLES += [
    Table("peers-simgrag", PEERS_DOC, ("dataset", "questions", "ours", "reference") + _PEER_COLS,
          [_peer_rows("simgrag-ref", "{dataset}", "{subset}", _ours_simgrag,
                      lambda r: f"its pipeline, {r['peer_variant'].split(': ')[1].split(', retriever')[0]}")]),
    Table("peers-vgr", PEERS_DOC, ("dataset", "questions", "ours", "vector-graph-rag") + _PEER_COLS,
          [_peer_rows("vector-graph-rag", "{dataset}", lambda r: r.get("subset") or "all",
                      lambda r: r["ours_variant"].split(" (")[0], lambda r: r["peer_variant"].split(" (")[0])]),
    Table("peers-vgr-naive", PEERS_DOC, ("naive list", "passages cut at (word pieces)", "R@2 / R@5, all questions",
                                         "R@2 / R@5, the peer's questions", "top 5 equal to the peer's"),
          [Rows("peers_vgr_naive_trace.json", "rows", "{side}", "{cut}", _trace_recall("all"),
                _trace_recall("peer_answered"),
                lambda r: f"{r['same_top5_as_peer']} of {r['same_top5_as_peer'] + len(r['differs_from_peer'])}")]),
    Table("peers-kgp", PEERS_DOC, ("dataset", "ours", "reference") + _PEER_COLS,
          [_peer_rows("kgp-ref", lambda r: r["dataset"].split(" (")[0], lambda r: r["ours_variant"].split(" (")[0],
                      lambda r: r["peer_variant"].split(",")[0])]),
]


TABLES += [Table("llm-prefill", "docs/CPU.md", ("questions (seeded 200)", "order", "batch", "prompt tokens / q",
                  "prefilled tokens / q", "vs the sample's order"), [Rows("llm_prefill.json", "rows", "{dataset}", "{order}",
                  "{batch_size}", "{prompt_tokens_per_question:,.0f}", "{prefill_tokens_per_question:,.0f}", "{prefill_vs_sample_order:.2f}x")])]

_VARIANT = ("{seconds:.0f}", "{vs_first:.2f}x", "{prefill_seconds:.0f}", "{decode_seconds:.0f}", "{equal_share:.0%}")
TABLES += [Table("llm-variants", "docs/CPU.md", ("run", "variant", "seconds", "vs Q4_K_M, same run", "multi-token batches s",
                  "single-token steps s", "replies equal to Q4_K_M's"),
                 [Rows("llm_variants.json", "rows", "1", "{variant}", *_VARIANT),
                  Rows("llm_variants_lookup_last_logits.json", "rows", "2", "{variant}", *_VARIANT)])]

_SAMPLER = ("{seconds:.0f}", "{vs_first:.2f}x", "{prefill_seconds:.0f}", "{decode_seconds:.0f}", "{completion_tokens}",
            "{equal_share:.0%}")
TABLES += [Table("llm-grammar-first", "docs/CPU.md", ("questions (first 24 calls)", "schema decoding", "seconds",
                  "vs the chain", "prefill s", "the rest s", "completion tokens", "replies equal to the chain's"),
                 [Rows(f"llm_grammar_first_{h}hop.json", "rows", f"metaqa-{h}hop",
                       lambda r: {"q4_k_m": "llama-cpp-python's chain", "grammar-first": "grammar-first"}[r["variant"]],
                       *_SAMPLER) for h in "123"])]

TABLES += [Table("llm-before-now", "docs/CPU.md", ("questions", "LLM stage", "batch", "order", "schema sampler", "seconds",
                  "s / question", "vs before", "prefill s (tokens)", "replies equal to before's"),
                 [Rows(f"llm_before_now_{h}hop.json", "rows", f"metaqa-{h}hop, first 50", "{variant}", "{batch_size}",
                       lambda r: "run_order" if r["run_order"] else "sample order",
                       lambda r: "grammar-first" if r["grammar_first"] else "llama-cpp-python's chain", "{seconds:.0f}",
                       "{seconds_per_question:.2f}", "{vs_first:.2f}x", "{prefill_seconds:.0f} ({prefill_tokens:,})",
                       "{equal} of {calls}") for h in "12"])]
