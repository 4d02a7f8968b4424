"""The explorer's view of a method's records: how they read as outline rows, panels and stage signatures.

A method's view is the module `view.py` beside its class (`kgrag_utils/methods/<m>/view.py`, found through the
registry: `MethodSpec.view`); this package holds what every view shares (`common`) and the view of a method
without one of its own (`generic`: its record's keys as a table). A view module has `outline(rec) -> dict` (see `..outcome`), `panels(rec) -> list[Panel]` (the example's
stages in the method's own terms) and `signature(rec) -> list[(stage, value)]` (what each stage produced,
in pipeline order: two runs' records first differ at the stage where their outcomes parted,
`..compare`).
"""

from __future__ import annotations

import importlib
import inspect
from types import ModuleType
from typing import Mapping

__all__ = ["view_for", "panels_of", "view_failure", "VIEW_FAILED"]


def view_for(method: str) -> ModuleType:
    """The view module of a method (the name its run records carry): the registered method's own view, else the
    generic view (an unregistered name, a notebook that is no method, a method without a view.py)."""
    from ...methods.registry import entries

    spec = entries().get(str(method))
    view = getattr(spec, "view", None)
    return view if view is not None else importlib.import_module(f"{__name__}.generic")


def panels_of(view: ModuleType, rec: Mapping, passages: Mapping[str, str] | None = None) -> list:
    """A view's panels of one record (passing the passage texts to the views that show passages), the
    drawing first: the example's graph, then its summary table and the rest in the view's order."""
    try:
        if passages is not None and "passages" in inspect.signature(view.panels).parameters:
            panels = view.panels(rec, passages=passages)
        else:
            panels = view.panels(rec)
    except Exception:  # one odd record must not stop a notebook's last cells: the failure is shown, never hidden
        panels = [view_failure(view, rec)] + importlib.import_module(f"{__name__}.generic").panels(rec)
    first = next((i for i, p in enumerate(panels) if p.kind == "graphs"), None)
    return panels if first is None else [panels[first]] + panels[:first] + panels[first + 1:]


VIEW_FAILED = "The view of this record failed"


def view_failure(view: ModuleType, rec: Mapping):
    """A panel that says which view failed on which record, with the traceback (then the generic view)."""
    import traceback

    from ..panels import Panel

    return Panel(VIEW_FAILED, "text", text=f"{view.__name__} on record {rec.get('id')!r}:\n{traceback.format_exc()}",
                 note="please report it; the record's fields follow")
