"""The peer harnesses (benchmarks/peers/): intervals, rows, the LLM server's life, scoring, and each harness
end to end on tiny generated data with the fake OpenAI-compatible server (tests/fake_openai.py).

The peers' own packages live in their own environments (benchmarks/peers/setup.sh) and stay out of
`make test`: the SimGRAG-reference harness runs here against a small stand-in of the reference's
modules written by the test (its interfaces, not its code), and the vector-graph-rag harness against
the real package where its environment exists (skipped otherwise, with the command that makes it).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks" / "peers"))

import common  # noqa: E402
import simgrag_ref  # noqa: E402
from fake_openai import FakeOpenAIServer  # noqa: E402


# ----------------------------------------------------------------------------- intervals and rows
def test_wilson_interval_brackets_the_proportion_and_narrows_with_n():
    lo, hi = common.wilson(72, 100)
    assert lo < 0.72 < hi and round(lo, 3) == 0.625 and round(hi, 3) == 0.799
    lo2, hi2 = common.wilson(720, 1000)
    assert hi2 - lo2 < hi - lo
    assert common.wilson(0, 10)[0] == 0.0 and common.wilson(10, 10)[1] == 1.0 and common.wilson(0, 0) is None


def test_score_row_uses_wilson_for_hits_and_bootstrap_for_recall_and_pairs_questions():
    hits = common.score_row("p", "1", "d", "llm", "hits@1", "o", "q", [1, 1, 0, 1], [1, 0, 0, 0])
    assert hits["ours"] == 0.75 and hits["peer_score"] == 0.25 and hits["interval"].startswith("Wilson")
    assert hits["difference"]["ours_better"] == 2 and hits["difference"]["peer_better"] == 0 and hits["n"] == 4
    assert set(common.ROW_KEYS) <= set(hits)
    rec = common.score_row("p", "1", "d", "llm", "recall@5", "o", "q", [0.5, 1.0, 0.0], [0.5, 0.5, 0.5])
    assert rec["interval"].startswith("bootstrap") and rec["ours_ci95"][0] <= 0.5 <= rec["ours_ci95"][1]
    with pytest.raises(ValueError, match="2 scores of ours vs 1"):
        common.score_row("p", "1", "d", "llm", "m", "o", "q", [1, 0], [1])


def test_merge_rows_replaces_only_the_same_rows(tmp_path):
    out = tmp_path / "peers.json"
    a = common.score_row("vgr", "1", "musique", "llm", "recall@5", "naive", "naive", [1.0], [0.0])
    b = common.score_row("vgr", "1", "musique", "llm", "recall@2", "naive", "naive", [1.0], [1.0])
    common.merge_rows([a, b], out, note={"run-a": {"x": 1}})
    a2 = common.score_row("vgr", "1", "musique", "llm", "recall@5", "naive", "naive", [0.0], [0.0])
    common.merge_rows([a2], out, note={"run-b": {"y": 2}})
    data = json.loads(out.read_text())
    assert [(r["metric"], r["ours"]) for r in data["rows"]] == [("recall@2", 1.0), ("recall@5", 0.0)]
    assert set(data["runs"]) == {"run-a", "run-b"} and data["row_keys"] == list(common.ROW_KEYS)
    a3 = common.score_row("vgr", "1", "musique", "llm", "recall@5", "naive (embedder minilm@512, run c)", "naive",
                          [0.5], [0.0])  # the same variant, other details: a re-run replaces the row
    other = common.score_row("vgr", "1", "musique", "llm", "recall@5", "expand (run c)", "naive", [0.5], [0.0])
    common.merge_rows([a3, other], out)
    rows = json.loads(out.read_text())["rows"]
    assert sorted((r["metric"], r["ours_variant"], r["ours"]) for r in rows) == [
        ("recall@2", "naive", 1.0), ("recall@5", "expand (run c)", 0.5),
        ("recall@5", "naive (embedder minilm@512, run c)", 0.5)]


# ----------------------------------------------------------------------------- the server's life
def test_llm_server_is_started_answers_and_is_stopped(tmp_path):
    port = common.free_port()
    cmd = [sys.executable, str(ROOT / "tests" / "fake_openai.py"), "--port", str(port), "--model", "m"]
    with common.llm_server("m", tmp_path / "server.log", command=cmd, port=port, timeout_s=600) as url:
        assert url == f"http://127.0.0.1:{port}/v1"
        models = json.loads(urllib.request.urlopen(url + "/models", timeout=10).read())
        assert models["data"][0]["id"] == "m"
    with pytest.raises(OSError):  # stopped: nothing listens on the port any more
        urllib.request.urlopen(url + "/models", timeout=2)


def test_a_server_that_dies_at_start_is_reported_with_its_log(tmp_path):
    cmd = [sys.executable, "-c", "import sys; print('no model file here'); sys.exit(3)"]
    with pytest.raises(RuntimeError, match="exited with 3.*no model file here"):
        with common.llm_server("m", tmp_path / "server.log", command=cmd, timeout_s=600):
            pass


def test_server_threads_follow_the_projects_llm_threads_setting(monkeypatch):
    import kgrag_utils.llm.gguf_assets as gguf_assets

    monkeypatch.setattr(gguf_assets, "assemble", lambda spec: Path("/models/m.gguf"))

    def flag(cmd, name):
        return cmd[cmd.index(name) + 1]

    monkeypatch.setenv("KGRAG_LLM_THREADS", "1")
    cmd = common.server_command("qwen2.5-coder-1.5b", 8080)
    assert flag(cmd, "--n_threads") == "1" and flag(cmd, "--n_threads_batch") == "1"
    monkeypatch.setenv("KGRAG_LLM_THREADS", "3")
    cmd = common.server_command("qwen2.5-coder-1.5b", 8080)
    assert flag(cmd, "--n_threads") == "3" and flag(cmd, "--n_threads_batch") == "3"
    assert flag(common.server_command("qwen2.5-coder-1.5b", 8080, threads=2), "--n_threads_batch") == "2"
    assert (flag(cmd, "--cache"), flag(cmd, "--cache_type")) == ("true", "ram")  # the few-shot prefix is kept
    try:  # every flag is one llama-cpp-python's server parses (where it is installed: make setup)
        from llama_cpp.server.cli import add_args_from_model, parse_model_from_args
        from llama_cpp.server.settings import ModelSettings, Settings
    except ImportError:
        if os.environ.get("CI"):  # CI installs it (make setup): the flags must be checked there
            raise
        return
    import argparse

    parser = argparse.ArgumentParser()
    add_args_from_model(parser, Settings)
    model = parse_model_from_args(ModelSettings, parser.parse_args(cmd[3:]))
    assert model.cache and model.cache_type == "ram" and model.n_ctx == 8192 and model.model == "/models/m.gguf"


def test_missing_peer_environment_names_the_setup_command(tmp_path, monkeypatch):
    monkeypatch.setenv("PEERS_HOME", str(tmp_path))
    with pytest.raises(SystemExit, match="benchmarks/peers/setup.sh vector-graph-rag"):
        common.peer_python("vector-graph-rag")


# ----------------------------------------------------------------------------- scoring the reference's prose
def test_first_named_reads_the_first_evidence_name_not_in_the_question():
    names = ["Ghajini", "2008", "Aamir Khan", "Dil Chahta Hai"]
    q = "the films that share actors with Dil Chahta Hai were released in which years"
    assert simgrag_ref.first_named("According to graph [1], the film was released in 2008.", names, q) == "2008"
    assert simgrag_ref.first_named("Dil Chahta Hai shares Aamir Khan with Ghajini (2008)", names, q) == "Aamir Khan"
    assert simgrag_ref.first_named("No evidence is useful.", names, q) is None
    # word boundaries: "2008" is not found inside "20080"
    assert simgrag_ref.first_named("code 20080", names, q) is None


def test_reference_check_is_a_case_insensitive_substring():
    assert simgrag_ref.reference_check("the answer is PARIS.", ["Paris"]) == 1.0
    assert simgrag_ref.reference_check(None, ["Paris"]) == 0.0
    assert simgrag_ref.reference_check("Lyon", ["Paris"]) == 0.0


def test_failing_stage_of_a_reference_answer():
    st = simgrag_ref._stage
    assert st(1.0, True, True, None) is None
    assert st(0.0, False, False, None) == "pattern"
    assert st(0.0, True, False, True) == "pattern"  # the gold pattern would have found it
    assert st(0.0, True, False, False) == "retrieval"
    assert st(0.0, True, True, None) == "generation"


def test_oracle_graph_follows_the_gold_chain_and_its_directions():
    class Q:
        topic_entities = ["Film A"]
        chain = [("directed_by", True), ("directed_by", False)]

    assert simgrag_ref.oracle_graph(Q()) == [["Film A", "directed by", "UNKNOWN 1"], ["UNKNOWN 2", "directed by", "UNKNOWN 1"]]


# ----------------------------------------------------------------------------- the SimGRAG-reference harness
STAND_IN_REFERENCE = {
    # the reference's module interfaces, implemented minimally for the test (none of its code)
    "src/__init__.py": "",
    "prompts/__init__.py": "",
    "src/vecdb.py": "MilvusClient = None\n",
    "src/dataset.py": """
        class MetaQA:
            def __init__(self, configs):
                raw, hop = configs["raw_data_dir"], configs["hop"]
                qa = f"{raw}/1-hop/vanilla/qa_test.txt" if hop == 1 else f"{raw}/{hop}-hop/{hop}-hop/vanilla/qa_test.txt"
                self.KG = {}
                for line in open(f"{raw}/kb.txt", encoding="utf-8"):
                    h, r, t = line.strip().split("|")
                    self.KG.setdefault(h, {}).setdefault(r, []).append(t)
                    self.KG.setdefault(t, {}).setdefault(r, []).append(h)
                rows = [line.rstrip("\\n").split("\\t") for line in open(qa, encoding="utf-8")]
                self.queries = [q.replace("[", "").replace("]", "") for q, _ in rows]
                self.groundtruths = [a.split("|") for _, a in rows]
            def get_KG(self): return self.KG
            def get_queries(self): return self.queries
            def get_groundtruths(self): return self.groundtruths
        """,
    "src/indexer.py": """
        import os
        class Indexer:
            def __init__(self, configs): self.configs = configs
            def build_index(self, KG):
                os.makedirs(self.configs["processed_data_dir"], exist_ok=True)
                open(os.path.join(self.configs["processed_data_dir"], "built"), "w").write(str(len(KG)))
        """,
    "src/retriever.py": """
        class Retriever:
            def __init__(self, configs, KG): self.KG = KG
            def retrieve(self, query_graph, mode="greedy"):
                known = [x for e in query_graph for x in (e[0], e[2]) if "UNKNOWN" not in x and x in self.KG]
                if not known:
                    raise Exception("No similar nodes found for the root, too many unknown nodes")
                edges = [[(known[0], r, t)] for r, ts in sorted(self.KG[known[0]].items()) for t in sorted(ts)]
                return {"results": [(0.5, g, False) for g in edges[:3]]}
        """,
    "src/llm.py": """
        import json, types, urllib.request
        class LLM:
            def __init__(self, configs):
                self.configs = configs["llm"]
                def create(**kw):
                    req = urllib.request.Request(self.configs["base_url"] + "/chat/completions",
                                                 data=json.dumps(kw).encode(), headers={"Content-Type": "application/json"})
                    body = json.loads(urllib.request.urlopen(req, timeout=30).read())
                    ch = body["choices"][0]
                    usage = types.SimpleNamespace(model_dump=lambda: body["usage"])
                    return types.SimpleNamespace(usage=usage, choices=[types.SimpleNamespace(
                        finish_reason=ch["finish_reason"], message=types.SimpleNamespace(content=ch["message"]["content"]))])
                self.client = types.SimpleNamespace(chat=types.SimpleNamespace(completions=types.SimpleNamespace(create=create)))
                self.chat("Hello!")
            def chat(self, text):
                c = self.client.chat.completions.create(model=self.configs["model"], messages=[{"role": "user", "content": text}],
                                                        temperature=self.configs["temperature"], max_tokens=self.configs["max_tokens"])
                return c.choices[0].message.content.strip()
        """,
    "src/utils.py": """
        import json, re
        def extract_graph(out):
            try:
                return json.loads(re.search(r"\\{.*\\}", out, re.DOTALL).group(0))["graph"]
            except Exception:
                raise Exception("Fail to decode rewrited graph")
        def check_answer(answer, groundtruths):
            return any(g.lower() in answer.lower() for g in groundtruths)
        """,
    "prompts/rewrite_metaQA.py": "def get(query, shot=12):\n    return 'REWRITE: ' + query\n",
    "prompts/answer_metaQA.py": "def get(query, evidences, shot=12):\n    return 'ANSWER: ' + query + ' || ' + repr(evidences)\n",
    "configs/metaQA_1hop.json": json.dumps({"hop": 1, "retriever": {"node_sim_topk": 16, "relation_sim_topk": 16,
                                            "final_topk": 3, "timeout": 600},
                                            "llm": {"model": "x", "temperature": 0.2, "top_p": 0.1, "max_tokens": 1024},
                                            "rewrite_shot": 12, "answer_shot": 12, "embedding_model": {},
                                            "vector_store_names": {"node": "n", "relation": "r"}}),
}


def _write_tree(root: Path, files: dict) -> Path:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text), encoding="utf-8")
    return root


@pytest.fixture
def peer_sandbox(tmp_path, monkeypatch):
    monkeypatch.setenv("KGRAG_RESULTS_DIR", str(tmp_path / "results"))
    monkeypatch.setenv("KGRAG_SAMPLE_DIR", str(tmp_path / "sample"))
    monkeypatch.setenv("KGRAG_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("PEERS_HOME", str(tmp_path / "peers"))
    monkeypatch.setenv("KGRAG_RUNS_DIR", str(tmp_path / "runs"))  # our side's executed notebooks
    monkeypatch.setenv("KGRAG_FIGURES_DIR", str(tmp_path / "figures"))
    return tmp_path


@pytest.mark.parametrize("ours_from", ["harness", "existing run"])
def test_simgrag_ref_harness_runs_the_reference_stages_and_scores_both_sides(peer_sandbox, ours_from):
    from kgrag_utils.datasets import load_dataset

    tmp = peer_sandbox
    ref = _write_tree(tmp / "SimGRAG", STAND_IN_REFERENCE)
    items = load_dataset("sample-movies-1hop", split="test", limit=8, seed=0).items[:4]
    by_query = {q.question.replace("[", "").replace("]", ""): q for q in items}
    right = {items[0].qid, items[1].qid}  # the fake model answers these two right, the others wrongly

    def reply(body):
        text = body["messages"][-1]["content"]
        if text.startswith("REWRITE: "):
            q = by_query[text[len("REWRITE: "):]]
            if q.qid == items[3].qid:
                return "Here is the graph: none"  # an unparseable pattern
            return json.dumps({"graph": [[q.topic_entities[0], q.chain[0][0].replace("_", " "), "UNKNOWN 1"]]})
        if text.startswith("ANSWER: "):
            query, evidence = text[len("ANSWER: "):].split(" || ")
            q = by_query[query]
            gold = next((g for g in q.answers if g in evidence), q.answers[0])
            return f"According to graph [1], the answer is {gold}." if q.qid in right else "Graph [1] is not useful."
        return "Hello"

    out = tmp / "peers.json"
    with FakeOpenAIServer(reply=reply, models=("fake",)) as srv:
        argv = ["--reference-dir", str(ref), "--dataset", "sample-movies-1hop", "--limit", "8", "--take", "4",
                "--preset", "fake", "--base-url", srv.base_url, "--peer-python", sys.executable,
                "--out", str(out), "--chunk", "3"]
        if ours_from == "harness":
            argv += ["--ours-param", "llm_structured=off"]
        else:  # our side from a notebook run made before, of the whole seeded 8 (the peer's 4 are its first 4)
            common.run_ours("01_simgrag", {"dataset": "sample-movies-1hop", "limit": 8, "seed": 0, "llm_preset": "fake"},
                            [], "mine")
            with pytest.raises(SystemExit, match="seed=0, not 1"):  # another draw of questions is refused
                simgrag_ref.main([*argv, "--ours-run", "mine", "--seed", "1"])
            argv += ["--ours-run", "mine"]
        assert simgrag_ref.main(argv) == 0  # a first chunk: 3 of 4 questions on each side
        assert not out.exists()
        assert simgrag_ref.main(argv) == 0
    sent = [r["body"] for r in srv.requests]
    assert all(b["temperature"] == 0.0 and b["max_tokens"] == 160 for b in sent)  # greedy, our pattern budget
    assert sum(b["messages"][-1]["content"].startswith("REWRITE") for b in sent) == 4  # resumed, nothing twice
    rows = {(r["subset"], r["metric"]): r for r in json.loads(out.read_text())["rows"]}
    ref_check = rows[("all", "check_answer (reference's own scoring)")]
    assert ref_check["n"] == 4 and ref_check["peer_score"] == 0.5 and ref_check["peer"] == "simgrag-ref"
    # strict reads the first evidence name the reply mentions: the stand-in's evidence for items[0] lacks its gold
    assert rows[("all", "hits@1 (strict)")]["peer_score"] == 0.25
    assert rows[("all", "containment (lenient)")]["peer_score"] == 0.5
    assert rows[("all", "hits@1 (strict)")]["ours"] == 1.0  # our side: the fake preset replays the gold patterns
    run_dir = next((tmp / "results" / "peers").iterdir())
    compare = {r["id"]: r for r in map(json.loads, (run_dir / "compare.jsonl").read_text().splitlines())}
    assert compare[items[3].qid]["peer"]["stage_strict"] == "pattern"
    assert compare[items[2].qid]["peer"]["stage_strict"] == "generation"
    assert compare[items[1].qid]["peer"]["stage_strict"] is None
    assert compare[items[0].qid]["peer"]["stage_strict"] == "retrieval"  # the gold pattern finds no gold either
    assert compare[items[0].qid]["peer"]["stage_lenient"] is None
    note = json.loads(out.read_text())["runs"]["simgrag-ref/sample-movies-1hop"]
    assert (note["ours_run"] == "mine") == (ours_from == "existing run")
    assert note["peer"]["failed_stage_strict"] == {"pattern": 1, "retrieval": 1, "generation": 1}
    assert note["ours"]["failed_stage_strict"] == {"pattern": 0, "retrieval": 0, "generation": 0}
    assert len(list((tmp / "peers" / "work" / "simgrag-ref").glob("processed-metaqa-*-minilm/built"))) == 1


# ----------------------------------------------------------------------------- the vector-graph-rag harness
def _vgr_reply(body):
    msgs = body["messages"]
    if msgs[0]["role"] == "system" and "entity extraction" in msgs[0]["content"]:
        words = [w.strip("?,.") for w in msgs[-1]["content"].split() if w[:1].isupper()]
        return json.dumps({"named_entities": words[1:3]})
    last = msgs[-1]["content"]
    lines = [ln for ln in last.split("Relationship descriptions:")[-1].splitlines() if ln.startswith("[")]
    return json.dumps({"thought_process": "two", "useful_relations": lines[:2]})


@pytest.mark.slow
@pytest.mark.skipif(not (common.venv_dir("vector-graph-rag") / "bin" / "python").exists(),
                    reason="no vector-graph-rag environment: benchmarks/peers/setup.sh vector-graph-rag")
def test_vgr_harness_with_the_real_package_on_sample_passages(peer_sandbox, monkeypatch):
    import vgr

    monkeypatch.delenv("PEERS_HOME")  # the real environment
    out = peer_sandbox / "peers.json"
    with FakeOpenAIServer(reply=_vgr_reply, models=("fake",)) as srv:
        argv = ["--dataset", "sample-passages", "--limit", "4", "--preset", "fake", "--base-url", srv.base_url,
                "--work-dir", str(peer_sandbox / "vgr-work"), "--out", str(out)]
        assert vgr.main(argv) == 0
    rows = {(r["metric"], r["ours_variant"].split()[0]): r for r in json.loads(out.read_text())["rows"]}
    assert len(rows) == 8 and all(r["n"] == 4 for r in rows.values())
    # the same MiniLM over the same passage texts: naive retrieval agrees on both sides
    assert rows[("recall@5", "naive")]["ours"] == pytest.approx(rows[("recall@5", "naive")]["peer_score"])
    assert any("Relationship descriptions" in r["body"]["messages"][-1]["content"] for r in srv.requests)
    assert all(r["body"].get("max_tokens") == vgr.PEER_MAX_TOKENS for r in srv.requests)  # the harness's budget


# ----------------------------------------------------------------------------- the KGP-reference harness
STAND_IN_KGP = {
    # the interfaces of KG-LLM-MDQA's Pipeline/retriever.py that the harness calls, implemented minimally
    "Pipeline/retriever.py": """
        import langchain.prompts  # imported at module level by the reference too: must resolve to a stand-in
        from utils import tf_idf
        class TF_IDF_retriever:
            def __init__(self, k): self.k = k
            def retrieve(self, data): return [c for _, c in data["title_chunks"]][: self.k]
        class BM25_retriever(TF_IDF_retriever):
            def retrieve(self, data): return [c for _, c in data["title_chunks"]][::-1][: self.k]
        class KG_retriever:
            def __init__(self, k): self.k = k
            def retrieve(self, data, G):
                corpus = [c for _, c in data["title_chunks"]]
                order = sorted(G.nodes, key=lambda n: -G.degree(n))[: self.k]
                return [corpus[i] for i in order], None, None, None
        """,
    "Pipeline/utils.py": """
        import spacy
        nlp = spacy.load("en_core_web_lg")  # as in the reference: must not fail at import
        def tf_idf(*a, **k): return []
        """,
}


def test_kgp_ref_harness_scores_the_reference_retrievers_on_our_sets(peer_sandbox):
    import kgp_ref

    ref = _write_tree(peer_sandbox / "KG-LLM-MDQA", STAND_IN_KGP)
    out = peer_sandbox / "peers.json"
    argv = ["--reference-dir", str(ref), "--dataset", "sample-passages", "--limit", "3", "--graphs", "tfidf",
            "--peer-python", sys.executable, "--out", str(out)]
    assert kgp_ref.main(argv) == 0
    data = json.loads(out.read_text())
    rows = {(r["metric"], r["peer_variant"].split()[0].rstrip(",")): r for r in data["rows"]}
    assert len(rows) == 8 and all(r["n"] == 3 and r["peer"] == "kgp-ref" for r in rows.values())
    run_dir = next((peer_sandbox / "results" / "peers").iterdir())
    sets = [json.loads(x) for x in (run_dir / "sets.jsonl").read_text().splitlines()]
    peer = [json.loads(x) for x in (run_dir / "peer.jsonl").read_text().splitlines()]
    # the stand-in's TF-IDF returns the set's first 30 passages: recall@30 is the share of gold units covered there
    expected = sum(sum(any(i < 30 for i in cover) for cover in s["gold_cover"]) / len(s["gold_cover"])
                   for s in sets) / len(sets)
    assert rows[("recall@30", "TF_IDF_retriever")]["peer_score"] == pytest.approx(expected, abs=1e-4)
    assert peer[0]["tfidf"] == list(range(min(30, len(sets[0]["chunks"]))))
    assert [s["id"] for s in sets] == [p["id"] for p in peer]
    assert peer[0]["bm25"][0] == len(sets[0]["chunks"]) - 1  # texts mapped back to passage indices
    assert "BM25_retriever" in data["runs"]["kgp-ref/sample-passages"]["peer_only"]


STAND_IN_VGR = {
    # the vector_graph_rag interfaces benchmarks/peers/vgr_worker.py calls, implemented minimally (none of its code):
    # passages ranked by words shared with the question, relations = the released triples, a rerank over HTTP
    "vector_graph_rag/__init__.py": """
        import json, re, types, urllib.request
        words = lambda s: set(re.findall(r"\\w+", s.lower()))
        class _Reranker:
            cache = None
            def __init__(self, settings): self.settings, self.seen = settings, {}
            def rerank(self, question, ids, texts):  # replies remembered, as the package's response cache does
                key = (question, tuple(ids))
                if key not in self.seen:
                    self.seen[key] = self._call(question, ids, texts)
                return self.seen[key]
            def _call(self, question, ids, texts):
                from openai.resources.chat.completions import Completions
                lines = "\\n".join(f"[{i}] {t}" for i, t in zip(ids, texts))
                reply = Completions(self.settings.openai_base_url).create(
                    model=self.settings.llm_model, messages=[{"role": "user", "content": question + "\\n" + lines}])
                reply = reply.choices[0].message.content
                chosen = [x for x in json.loads(reply)["useful_relations"] if x in ids]
                return chosen, [texts[ids.index(x)] for x in chosen]
        class VectorGraphRAG:
            def __init__(self, settings):
                self.settings, self._reranker = settings, _Reranker(settings)
                self._store = types.SimpleNamespace(get_collection_stats=lambda: {"passage_count": len(getattr(self, "docs", []))})
            def add_documents_with_triplets(self, docs, show_progress=True):
                self.docs = docs
                self.rels = [(f"r{i}-{j}", " ".join(t), d["id"]) for i, d in enumerate(docs) for j, t in enumerate(d["triplets"])]
            def get_stats(self): return {"passages": len(self.docs), "relations": len(self.rels)}
            def _rank(self, q): return sorted(self.docs, key=lambda d: (-len(words(q) & words(d["passage"])), d["id"]))
            def retrieve_naive(self, q, top_k=5):
                return types.SimpleNamespace(retrieved_passages=[d["passage"] for d in self._rank(q)[:top_k]])
            def _ensure_retriever(self): return self
            def retrieve(self, q, use_reranking=True, top_k=None, **kw):
                cands = sorted(self.rels, key=lambda r: -len(words(q) & words(r[1])))[:10]
                found = types.SimpleNamespace(expanded_relation_ids=[r[0] for r in cands], expanded_relation_texts=[r[1] for r in cands],
                                              query_entities=[], entity_texts=[], relation_texts=[], eviction_before_count=0,
                                              eviction_after_count=0)
                if top_k is None:
                    return found
                ids = self._reranker.rerank(q, found.expanded_relation_ids, found.expanded_relation_texts)[0] if use_reranking \\
                    else found.expanded_relation_ids[:top_k]
                pids = self._get_passages_from_relations(ids)[0]
                text = {d["id"]: d["passage"] for d in self.docs}
                passages = [text[p] for p in pids] + [d["passage"] for d in self._rank(q) if d["id"] not in pids]
                return types.SimpleNamespace(retrieved_passages=passages[:top_k], reranked_relations=ids)
            def _get_passages_from_relations(self, ids):
                pids = list(dict.fromkeys(r[2] for i in ids for r in self.rels if r[0] == i))
                text = {d["id"]: d["passage"] for d in self.docs}
                return pids, [text[p] for p in pids]
        """,
    "vector_graph_rag/config.py": "import types\n\ndef Settings(**kw):\n    return types.SimpleNamespace(**kw)\n",
    # the one openai interface the harness wraps (its reply budget), posting as the client does
    "openai/__init__.py": "",
    "openai/resources/__init__.py": "",
    "openai/resources/chat/__init__.py": "",
    "openai/resources/chat/completions.py": """
        import json, types, urllib.request
        class Completions:
            def __init__(self, base_url): self.base_url = base_url
            def create(self, **body):
                req = urllib.request.Request(self.base_url + "/chat/completions", data=json.dumps(body).encode(),
                                             headers={"Content-Type": "application/json"})
                out = json.loads(urllib.request.urlopen(req, timeout=30).read())
                choice = out["choices"][0]
                return types.SimpleNamespace(choices=[types.SimpleNamespace(
                    finish_reason=choice.get("finish_reason"), message=types.SimpleNamespace(**choice["message"]))],
                    usage=types.SimpleNamespace(**out.get("usage", {})))
        """,
    "vector_graph_rag/llm/__init__.py": "",
    "vector_graph_rag/llm/cache.py": "class LLMCache:\n    def __init__(self, d): pass\n\ndef set_llm_cache(c): pass\n",
}


def test_vgr_worker_stops_when_the_llm_server_is_lost():
    """A lost server (the package's retries end in a connection error) stops the run instead of being recorded as
    the peer's failure on every remaining question; any other error is one question's failure."""
    from concurrent.futures import Future

    import vgr_worker

    class APIConnectionError(Exception):
        pass

    class RetryError(Exception):  # tenacity's: the last attempt's future holds the error
        def __init__(self, exc):
            self.last_attempt = Future()
            self.last_attempt.set_exception(exc)

    assert vgr_worker._server_lost(RetryError(APIConnectionError("Connection error.")))
    try:
        try:
            raise ConnectionRefusedError(111, "refused")
        except ConnectionRefusedError as inner:
            raise RuntimeError("wrapped") from inner
    except RuntimeError as outer:
        assert vgr_worker._server_lost(outer)
    assert not vgr_worker._server_lost(RetryError(ValueError("bad JSON")))
    assert not vgr_worker._server_lost(KeyError("id"))


def test_vgr_harness_on_a_stand_in_package(peer_sandbox, monkeypatch):
    import vgr

    pkg = _write_tree(peer_sandbox / "stand-in", STAND_IN_VGR)
    monkeypatch.setenv("PEER_PYTHONPATH", str(pkg))
    out = peer_sandbox / "peers.json"

    def reply(body):
        lines = [ln for ln in body["messages"][-1]["content"].splitlines() if ln.startswith("[")]
        return json.dumps({"useful_relations": [ln[1:ln.index("]")] for ln in lines[:2]]})

    with FakeOpenAIServer(reply=reply, models=("fake",)) as srv:
        argv = ["--dataset", "sample-passages", "--limit", "4", "--preset", "fake", "--base-url", srv.base_url,
                "--peer-python", sys.executable, "--work-dir", str(peer_sandbox / "vgr-work"), "--out", str(out),
                "--chunk", "3"]
        assert vgr.main(argv) == 0 and not out.exists()  # 3 of 4 questions: not complete yet
        assert vgr.main(argv) == 0
    assert sum("[r" in r["body"]["messages"][-1]["content"] for r in srv.requests) == 4  # one rerank per question
    assert {r["body"].get("max_tokens") for r in srv.requests} == {vgr.PEER_MAX_TOKENS}  # the package sets none
    data = json.loads(out.read_text())
    rows = {(r["metric"], r["ours_variant"].split()[0]): r for r in data["rows"]}
    assert len(rows) == 8 and all(r["n"] == 4 and r["peer"] == "vector-graph-rag" for r in rows.values())
    run_dir = next((peer_sandbox / "results" / "peers").iterdir())
    peer = [json.loads(x) for x in (run_dir / "peer.jsonl").read_text().splitlines()]
    for p in peer:  # padded = the rerank's passages, then naive ones; the unpadded list is its prefix
        assert p["padded"][: len(p["rerank"])] == p["rerank"] and len(p["padded"]) == 5
        assert len(p["llm_calls"]) == 1 and p["llm_calls"][0]["finish"] is not None
    for p in peer:  # the no-LLM list before its top-up: the first 5 candidates' passages
        assert len(p["expand_unpadded"]) <= 5 and set(p["expand_unpadded"]) <= set(p["expand"])
    # the complete run's peer outcomes (passage ids, no texts) let ours be scored again without the peer
    kept = peer_sandbox / "peers_vgr_sample-passages_n4.json"
    record = json.loads(kept.read_text())
    assert [q["id"] for q in record["questions"]] == [p["id"] for p in peer]
    assert record["complete"] and record["llm_calls"] == {"n": 4, "hit_the_budget": 0}
    assert all(q["rerank"] == [vgr._pid_key(x) for x in p["rerank"]] and "candidates" not in q
               for q, p in zip(record["questions"], peer))  # hashed ids: no passage title in the file
    for f in run_dir.glob("peer.*"):
        f.unlink()
    monkeypatch.delenv("PEER_PYTHONPATH")  # no peer package at all now
    again = peer_sandbox / "again.json"
    assert vgr.main([*argv[:-1], "0", "--sides", "ours", "--peer-from", str(kept), "--out", str(again),
                     "--peer-python", "/nonexistent/python"]) == 0
    rows2 = {(r["metric"], r["ours_variant"].split()[0]): r for r in json.loads(again.read_text())["rows"]}
    assert {k: (r["ours"], r["peer_score"]) for k, r in rows2.items()} == \
        {k: (r["ours"], r["peer_score"]) for k, r in rows.items()}
    with pytest.raises(SystemExit, match="other settings"):
        vgr.main([*argv[:-1], "0", "--sides", "ours", "--peer-from", str(kept), "--limit", "3", "--out", str(again)])
    # the naive trace: its 256-piece cut is our naive list (its recall is our naive row's), beside the peer's lists
    import vgr_naive_trace

    trace_out = peer_sandbox / "trace.json"
    assert vgr_naive_trace.main(["--dataset", "sample-passages", "--limit", "4", "--peer-from", str(kept),
                                 "--out", str(trace_out)]) == 0
    trace = json.loads(trace_out.read_text())
    assert trace["n_peer_answered"] == 4 and [r["cut"] for r in trace["rows"]] == [256, 512, 512]
    ours256, _, peer_row = trace["rows"]
    assert ours256["all_recall@5"] == pytest.approx(rows2[("recall@5", "naive")]["ours"], abs=1e-4)
    assert peer_row["all_recall@5"] == pytest.approx(rows2[("recall@5", "naive")]["peer_score"], abs=1e-4)
    assert peer_row["same_top5_as_peer"] == 4 and not peer_row["differs_from_peer"]
    for row in trace["rows"]:
        assert row["same_top5_as_peer"] + len(row["differs_from_peer"]) == 4


def test_naive_trace_takes_the_exact_top_k_with_ties_in_corpus_order():
    import numpy as np
    import vgr_naive_trace

    q = np.array([[1.0, 0.0], [0.0, 1.0]])
    p = np.array([[0.5, 0.5], [1.0, 0.0], [0.5, 0.5], [0.0, 1.0]])
    assert vgr_naive_trace.top_k_ids(q, p, ["a", "b", "c", "d"], 3) == [["b", "a", "c"], ["d", "a", "c"]]
