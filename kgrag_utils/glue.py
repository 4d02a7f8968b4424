"""Numbers a notebook glues into its executed copy, for the tests and the book to read back (scrapbook's idea:
the notebook displays its headline numbers under a MIME type of their own, beside a plain-text line a reader sees).

    glue_run(recorder, summary)          # the last cell of a method notebook, after recorder.finish
    glued("runs/repro-headline/x.ipynb") # -> {"run": {"run_name": ..., "n": ..., "scores": {...}}}

A test reads the glued numbers of an executed notebook and compares them with the run record the same run
wrote (`results/<run>/run.json`): what the notebook showed is what the record holds.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Mapping

from .errors import ConfigError
from .records import to_jsonable

__all__ = ["GLUE_MIME", "glue", "glue_run", "glued"]

GLUE_MIME = "application/vnd.kgrag.glue+json"


def glue(name: str, value: Any) -> None:
    """Display `value` under `name` in the notebook's output (JSON; nan as null), with a plain-text line."""
    from IPython.display import display

    data = to_jsonable(value)
    display({GLUE_MIME: {"name": name, "value": data},
             "text/plain": f"{name}: {json.dumps(data, ensure_ascii=False)}"}, raw=True)


def glue_run(recorder: Any, summary: Mapping[str, Any]) -> None:
    """A method run's headline numbers as its record stores them: run name, questions, scores per variant."""
    glue("run", {"run_name": Path(recorder.run_dir).name, "n": summary.get("n"),
                 "n_failed": summary.get("n_failed"), "scores": summary.get("scores") or {}})


def glued(notebook: Path | str) -> dict[str, Any]:
    """Every value glued in an executed notebook, by name (the last one wins)."""
    path = Path(notebook)
    try:
        nb = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ConfigError(f"cannot read the executed notebook {path} ({type(exc).__name__}): run it first.") from None
    out: dict[str, Any] = {}
    for cell in nb.get("cells", []):
        for output in cell.get("outputs", []) if cell.get("cell_type") == "code" else []:
            item = (output.get("data") or {}).get(GLUE_MIME)
            if isinstance(item, Mapping) and "name" in item:
                out[str(item["name"])] = item.get("value")
    return out
