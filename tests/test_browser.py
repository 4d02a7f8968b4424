"""The notebooks in a real browser: JupyterLab on 127.0.0.1 driven by headless Chromium (Debian's), with the
project's `python3` kernel, on sample data with the fake LLM and tiny limits.

- The explorer notebook runs all its cells; picking another example in the widget changes the drawn graph
  and the example's table; a click on a row of the run-to-run table opens both records.
- Each method notebook (and the quickstart) runs all its cells: no cell shows an error, every image
  loads, every plotly graph draws, no widget fails to render.
Screenshots go to results/browser/ for a person to look at. Without Chromium or Playwright the tests skip,
except under CI (`CI` set), where they fail: .ci/run installs Chromium.
"""

from __future__ import annotations

import os

import pytest

from browser_lab import RENDER_TIMEOUT_MS, Lab, launch, missing_browser, run_all, screenshot_at

# one JupyterLab server and one browser for all of them: under pytest-xdist (make test: --dist loadfile) this file runs
# on one worker
pytestmark = [pytest.mark.slow, pytest.mark.browser]

#: tiny runs: the fake LLM (a test double, plumbing only) on sample data; the explorer test reads the first two
METHOD_RUNS = {
    "00_quickstart": {"llm_preset": "fake", "limit": 3},
    "01_simgrag": {"llm_preset": "fake", "limit": 3},
    "02_compact_relations": {"llm_preset": "fake", "limit": 2},
    "03_vector_rerank": {"llm_preset": "fake", "limit": 2},
    "04_kgp": {"llm_preset": "fake", "limit": 2, "sweep_limit": 2},
}
RUN_NAMES = {stem: f"browser-{stem}" for stem in METHOD_RUNS}


@pytest.fixture(scope="session")
def lab(tmp_path_factory):
    why = missing_browser()
    if why:
        if os.environ.get("CI"):
            pytest.fail(f"browser tests cannot run under CI: {why}")
        pytest.skip(why)
    server = Lab(tmp_path_factory.mktemp("lab")).start()
    yield server
    server.stop()


@pytest.fixture(scope="session")
def browser(lab):
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = launch(p)
        yield b
        b.close()


@pytest.fixture
def page(browser, lab):
    context = browser.new_context(viewport={"width": 1500, "height": 1100})
    pg = context.new_page()
    pg.set_default_timeout(RENDER_TIMEOUT_MS)
    yield pg
    context.close()
    lab.shutdown_kernels()


def _assert_clean(state: dict, name: str, lab: Lab) -> None:
    assert state["errors"] == [], f"{name}: cells raised {state['errors']} (server log: {lab.log_tail(800)})"
    assert state["unrun"] == 0, f"{name}: {state['unrun']} code cells did not run"
    assert state["broken_images"] == 0, f"{name}: {state['broken_images']} of {state['images']} images did not load"
    assert state["empty_plots"] == 0, f"{name}: {state['empty_plots']} of {state['plots']} plotly graphs drew nothing"
    assert state["widget_errors"] == 0, f"{name}: a widget failed to render"
    assert state["stderr_errors"] == [], f"{name}: {state['stderr_errors']}"


def _run_method(lab, page, stem) -> dict:
    rel = lab.add_notebook(stem, {**METHOD_RUNS[stem], "run_name": RUN_NAMES[stem]})
    return run_all(page, lab, rel, stem)


@pytest.mark.parametrize("stem", list(METHOD_RUNS))
def test_method_notebook_runs_in_jupyterlab(lab, page, stem):
    state = _run_method(lab, page, stem)
    _assert_clean(state, stem, lab)
    assert state["images"] >= 1, f"{stem}: no figure rendered"
    # the explorer cell opened the run just made as a live widget, its graphs drawn by plotly
    assert page.locator(".kgrag-explorer").count() == 1, f"{stem}: the explorer widget is missing"
    assert page.locator(".kgrag-explorer .kgrag-example-list select option").count() == METHOD_RUNS[stem]["limit"]
    page.wait_for_selector(".kgrag-explorer .kgrag-graph .main-svg", timeout=RENDER_TIMEOUT_MS)
    screenshot_at(page, ".kgrag-explorer", f"{stem}-explorer")


def _graph_text(page) -> str:
    return page.locator(".kgrag-explorer .kgrag-graph").first.inner_text()


def _table_text(page) -> str:
    return page.locator(".kgrag-explorer .kgrag-example .kgrag-table").first.inner_text()


def _wait_changed(page, js_value: str, before: str) -> None:
    page.wait_for_function(f"(before) => {{ const v = {js_value}; return v !== null && v !== before; }}", arg=before,
                           timeout=RENDER_TIMEOUT_MS, polling=500)


_GRAPH = "(document.querySelector('.kgrag-explorer .kgrag-graph .main-svg') || {}).textContent || null"
_COUNT = "(document.querySelector('.kgrag-explorer .kgrag-count') || {}).innerText || null"
_SHOWN = "(document.querySelector('.kgrag-compare .kgrag-compare-shown') || {}).innerText || null"


def test_the_explorer_notebook_follows_the_selected_example_and_compares_two_runs(lab, page):
    for stem in ("00_quickstart", "01_simgrag"):  # the runs it reads (made by the tests above, or here when run alone)
        if not (lab.base / "results" / RUN_NAMES[stem] / "run.json").exists():
            assert _run_method(lab, page, stem)["errors"] == []
    # section 4 (ask every method) has its own test below; with it, the explorer's plotly graph never became visible here
    rel = lab.add_notebook("06_explore", {"run": RUN_NAMES["01_simgrag"], "compare": RUN_NAMES["00_quickstart"],
                                          "ask_question": ""})
    state = run_all(page, lab, rel, "06_explore")
    _assert_clean(state, "06_explore", lab)
    explorer = page.locator(".kgrag-explorer")
    assert explorer.count() == 1 and explorer.locator(".kgrag-example-list select option").count() == 3
    page.wait_for_selector(".kgrag-explorer .kgrag-graph .main-svg", state="attached", timeout=RENDER_TIMEOUT_MS)
    explorer.locator(".kgrag-graph").first.scroll_into_view_if_needed()
    page.wait_for_selector(".kgrag-explorer .kgrag-graph .main-svg", timeout=RENDER_TIMEOUT_MS)
    graph0, table0 = page.evaluate(f"() => {_GRAPH}"), _table_text(page)
    screenshot_at(page, ".kgrag-explorer", "explorer-first")
    # pick the third example in the list: the drawn graph and the example's table follow
    explorer.locator(".kgrag-example-list select").select_option(index=2)
    _wait_changed(page, _GRAPH, graph0)
    assert _table_text(page) != table0 and "#2" in explorer.locator(".kgrag-count").inner_text()
    screenshot_at(page, ".kgrag-explorer", "explorer-third")
    # previous steps back one
    count = page.evaluate(f"() => {_COUNT}")
    explorer.locator("button.kgrag-prev").click()
    _wait_changed(page, _COUNT, count)
    assert "#1" in explorer.locator(".kgrag-count").inner_text()
    # two runs side by side: SimGRAG answers some of the three questions, the fake reader of the quickstart none
    compare = page.locator(".kgrag-compare")
    assert compare.count() == 1
    rows = compare.locator(".kgrag-compare-open")
    assert rows.count() >= 2, compare.inner_text()[:2000]
    shown = page.evaluate(f"() => {_SHOWN}")
    rows.last.scroll_into_view_if_needed()
    rows.last.click()
    _wait_changed(page, _SHOWN, shown)
    assert compare.locator(".kgrag-example").count() == 2
    screenshot_at(page, ".kgrag-compare", "explorer-compare")


def test_the_explorer_asks_every_method_a_typed_question(lab, page):
    """Section 4 of the explorer: type a question of your own into the box, see every method's stages."""
    rel = lab.add_notebook("06_explore", {"ask_llm_preset": "fake", "run_name": "browser-06-ask"})
    state = run_all(page, lab, rel, "06_explore-ask")
    _assert_clean(state, "06_explore", lab)
    box = page.locator(".kgrag-ask-box")
    assert box.count() == 1, "the ask box is missing"
    box.scroll_into_view_if_needed()
    mine = "Who founded the society that [Marla Quist] belongs to?"
    box.locator("input").first.fill(mine)
    box.locator("button").first.click()
    page.wait_for_function("(q) => [...document.querySelectorAll('.kgrag-ask-box .kgrag-ask h4')]"
                           ".some(h => h.innerText.includes(q))", arg=mine, timeout=RENDER_TIMEOUT_MS, polling=500)
    shown = box.evaluate("e => e.textContent")  # the stages sit in <details>, folded
    for stage in ("Pattern (LLM)", "Chain (first derivable proposal)", "Rerank reply (LLM)"):
        assert stage in shown, shown[:3000]
    screenshot_at(page, ".kgrag-ask-box", "explorer-ask")
