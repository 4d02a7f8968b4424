"""A JupyterLab server on 127.0.0.1 and headless Chromium driving it, for the browser tests.

The server serves a temporary folder holding copies of the notebooks (a notebook run in the browser is
saved there, never over the committed one; paths resolve from the repository root whatever the folder),
with its own results, cache, settings and workspaces. Chromium is Debian's (/usr/bin/chromium), driven by
Playwright's Python client; nothing downloads a browser. As root on a closed network Chromium needs the
flags below and a fresh profile (Playwright gives each launch a new one).
"""

from __future__ import annotations

import json
import os
import secrets
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM = os.environ.get("KGRAG_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync",
                  "--disable-dev-shm-usage"]
SCREENSHOTS = ROOT / "results" / "browser"  # git-ignored; for a person to look at
START_TIMEOUT_S = 300     # a JupyterLab server on two busy cores
RUN_TIMEOUT_MS = 900_000  # running every cell of a notebook: generous, waiting is fine
RENDER_TIMEOUT_MS = 300_000  # outputs, widgets, plotly graphs drawing (busy cores: make test runs two workers)

# JupyterLab settings for an unattended browser: no news or update checks (the network is closed), every cell
# kept in the page (no windowing), no autosave racing the test's own save.
LAB_SETTINGS = {
    "@jupyterlab/apputils-extension/notification.jupyterlab-settings": {"fetchNews": "false", "checkForUpdates": False},
    "@jupyterlab/notebook-extension/tracker.jupyterlab-settings": {"windowingMode": "none"},
    "@jupyterlab/docmanager-extension/plugin.jupyterlab-settings": {"autosave": False},
}


def missing_browser() -> str | None:
    """Why the browser tests cannot run here (None when they can)."""
    if not Path(CHROMIUM).exists():
        return f"{CHROMIUM} not found: apt-get install -y chromium chromium-driver (.ci/run does)"
    try:
        import playwright  # noqa: F401
    except ImportError:
        return "the playwright Python client is not installed: pip install -e '.[dev]'"
    return None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Lab:
    """One JupyterLab server for the whole test session."""

    def __init__(self, base: Path):
        self.base = base
        self.root_dir = base / "lab"
        self.token = secrets.token_hex(16)
        self.port = _free_port()
        self.env = self._environment()
        self.proc: subprocess.Popen | None = None

    def _environment(self) -> dict:
        env = dict(os.environ)
        for var, sub in (("KGRAG_RESULTS_DIR", "results"), ("KGRAG_FIGURES_DIR", "figures"), ("KGRAG_RUNS_DIR", "runs"),
                         ("JUPYTERLAB_SETTINGS_DIR", "settings"), ("JUPYTERLAB_WORKSPACES_DIR", "workspaces"),
                         ("JUPYTER_RUNTIME_DIR", "runtime"), ("JUPYTER_CONFIG_DIR", "config")):
            env[var] = str(self.base / sub)
        env.setdefault("KGRAG_CACHE_DIR", str(self.base / "cache"))
        share = Path(sys.prefix) / "share" / "jupyter"  # the project's `python3` kernel (a venv's sys-prefix kernelspec)
        env["JUPYTER_PATH"] = os.pathsep.join(p for p in (str(share), env.get("JUPYTER_PATH", "")) if p)
        env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH", "")) if p)
        env.pop("KGRAG_PROGRESS", None)
        env.pop("KGRAG_EXPLORE", None)
        return env

    def start(self) -> "Lab":
        (self.root_dir / "notebooks").mkdir(parents=True, exist_ok=True)
        for name, value in LAB_SETTINGS.items():
            path = self.base / "settings" / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps(value), encoding="utf-8")
        cmd = [sys.executable, "-m", "jupyterlab", "--no-browser", "--ServerApp.ip=127.0.0.1",
               f"--ServerApp.port={self.port}", f"--IdentityProvider.token={self.token}",
               f"--ServerApp.root_dir={self.root_dir}", "--ServerApp.open_browser=False",
               "--LabApp.news_url=", "--LabServerApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
               "--LabApp.extension_manager=readonly"]
        if hasattr(os, "geteuid") and os.geteuid() == 0:
            cmd.append("--allow-root")  # CI runs as root
        self.log = open(self.base / "jupyterlab.log", "w", encoding="utf-8")
        self.proc = subprocess.Popen(cmd, env=self.env, stdout=self.log, stderr=subprocess.STDOUT, cwd=self.root_dir)
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"JupyterLab exited ({self.proc.returncode}): {self.log_tail()}")
            try:
                with urllib.request.urlopen(f"{self.url}/api/status?token={self.token}", timeout=5) as r:
                    if r.status == 200:
                        return self
            except OSError:
                time.sleep(1)
        raise RuntimeError(f"JupyterLab did not answer within {START_TIMEOUT_S} s: {self.log_tail()}")

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def log_tail(self, n: int = 3000) -> str:
        try:
            return (self.base / "jupyterlab.log").read_text(encoding="utf-8", errors="replace")[-n:]
        except OSError:
            return ""

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
        if getattr(self, "log", None):
            self.log.close()

    # ------------------------------------------------------------------ notebooks
    def add_notebook(self, stem: str, overrides: dict | None = None) -> str:
        """Copy notebooks/<stem>.ipynb into the served folder, with a cell after its parameters cell that sets
        `overrides` (as papermill injects parameters); returns its path relative to the served folder."""
        nb = json.loads((ROOT / "notebooks" / f"{stem}.ipynb").read_text(encoding="utf-8"))
        if overrides:
            at = next(i for i, c in enumerate(nb["cells"]) if "parameters" in c.get("metadata", {}).get("tags", []))
            src = "".join(f"{k} = {v!r}\n" for k, v in overrides.items())
            nb["cells"].insert(at + 1, {"cell_type": "code", "id": "injected0", "execution_count": None,
                                        "metadata": {"tags": ["injected-parameters"]}, "outputs": [],
                                        "source": src.splitlines(keepends=True)})
        for cell in nb["cells"]:  # a hidden input (the exercises' solutions) shows no prompt, which _ALL_RAN reads;
            cell.get("metadata", {}).get("jupyter", {}).pop("source_hidden", None)  # test_course checks the hiding
        rel = f"notebooks/{stem}.ipynb"
        (self.root_dir / rel).write_text(json.dumps(nb, indent=1), encoding="utf-8")
        return rel

    def shutdown_kernels(self) -> None:
        """End every kernel the server runs (each holds a method's models in memory)."""
        import urllib.request as rq

        auth = {"Authorization": f"token {self.token}"}
        with rq.urlopen(rq.Request(f"{self.url}/api/sessions", headers=auth), timeout=30) as r:
            sessions = json.loads(r.read())
        for sess in sessions:
            rq.urlopen(rq.Request(f"{self.url}/api/sessions/{sess['id']}", method="DELETE", headers=auth), timeout=60)

    def saved(self, rel: str) -> dict:
        return json.loads((self.root_dir / rel).read_text(encoding="utf-8"))


def launch(playwright):
    return playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_FLAGS[1:])


_KERNEL_IDLE = """() => ((document.querySelector('#jp-main-statusbar') || document.body).innerText).includes('| Idle')"""

_ALL_RAN = """() => {
  const cells = [...document.querySelectorAll('.jp-Notebook .jp-CodeCell')];
  if (!cells.length) return false;
  return cells.every(c => /\\[\\d+\\]/.test((c.querySelector('.jp-InputPrompt') || {}).innerText || ''));
}"""

_RENDERED = """() => {
  const nb = document.querySelector('.jp-Notebook');
  const plots = [...nb.querySelectorAll('.js-plotly-plot')];
  const imgs = [...nb.querySelectorAll('.jp-OutputArea-output img')];
  return plots.every(p => p.querySelector('.main-svg')) && imgs.every(i => i.complete)
      && !/Loading widget/.test(nb.innerText);
}"""

_STATE = """() => {
  const ok = img => img.complete && img.naturalWidth > 0;
  const imgs = [...document.querySelectorAll('.jp-OutputArea-output img')];
  const plots = [...document.querySelectorAll('.jp-OutputArea-output .js-plotly-plot')];
  const text = document.querySelector('.jp-Notebook').innerText;
  return {cells: document.querySelectorAll('.jp-Notebook .jp-CodeCell').length,
          images: imgs.length, broken_images: imgs.filter(i => !ok(i)).length,
          plots: plots.length, empty_plots: plots.filter(p => !p.querySelector('.main-svg')).length,
          widget_errors: (text.match(/Error displaying widget|Failed to load model class|Model not found|The view of this record failed/g) || []).length,
          stderr_errors: [...document.querySelectorAll('.jp-OutputArea-output[data-mime-type="application/vnd.jupyter.stderr"]')]
              .map(e => e.innerText).filter(t => /Traceback|Error:/.test(t)).slice(0, 3)};
}"""


def run_all(page, lab: Lab, rel: str, shot: str) -> dict:
    """Open a notebook, run all its cells, wait until every cell ran, save it; the page's state (images,
    plots, widget errors) plus the saved notebook's error outputs."""
    # ?reset: a fresh workspace, so that the notebooks of earlier tests are not opened again beside this one
    page.goto(f"{lab.url}/lab/tree/{rel}?reset&token={lab.token}", wait_until="domcontentloaded", timeout=RUN_TIMEOUT_MS)
    page.wait_for_selector(".jp-Notebook .jp-CodeCell", timeout=RUN_TIMEOUT_MS)
    page.wait_for_function(_KERNEL_IDLE, timeout=RUN_TIMEOUT_MS, polling=1000)
    page.get_by_role("menuitem", name="Run", exact=True).click()
    page.get_by_role("menuitem", name="Run All Cells", exact=True).click()
    page.wait_for_function(_ALL_RAN, timeout=RUN_TIMEOUT_MS, polling=1000)
    try:  # let the last outputs and widgets render (the state below says what did not)
        page.wait_for_function(_RENDERED, timeout=RENDER_TIMEOUT_MS, polling=1000)
    except Exception:  # playwright's TimeoutError: measured and reported by the caller's checks
        pass
    state = page.evaluate(_STATE)
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / f"{shot}.png"), full_page=True)
    page.keyboard.press("Control+s")
    page.wait_for_timeout(2000)
    nb = lab.saved(rel)
    state["errors"] = [f"{o.get('ename')}: {o.get('evalue')}" for c in nb["cells"] for o in c.get("outputs", [])
                       if o.get("output_type") == "error"]
    state["unrun"] = sum(1 for c in nb["cells"] if c["cell_type"] == "code" and c.get("execution_count") is None)
    return state


def screenshot_at(page, selector: str, name: str) -> Path:
    """Scroll the notebook so that `selector`'s first element starts at the top, and screenshot the window."""
    page.locator(selector).first.evaluate("el => el.scrollIntoView({block: 'start'})")
    page.wait_for_timeout(1500)  # plotly redraws what scrolled into view
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    path = SCREENSHOTS / f"{name}.png"
    page.screenshot(path=str(path))
    return path
