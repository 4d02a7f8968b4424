"""The parameters cell of a notebook: its literal defaults, and overrides checked against them.

Below both the batch runner (`kgrag_utils.runner`) and the method registry (`kgrag_utils.methods.registry`),
which both read a notebook's parameters; it imports neither.

- `resolve_notebook(name)`: a notebook path from a name under `notebooks/` (did-you-mean on a typo);
- `notebook_parameters(path)`: the literals of the one cell tagged `parameters` (cached by mtime and size);
- `validate_parameters(notebook, overrides)`: overrides checked against them (`schema.check_parameters`).
"""

from __future__ import annotations

import ast
import copy
import json
from functools import lru_cache
from pathlib import Path
from typing import Any, Mapping

from . import schema, settings
from .errors import ConfigError, shown

__all__ = ["notebook_parameters", "resolve_notebook", "validate_parameters"]


def _load_nb(path: Path) -> dict:
    try:
        return json.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError(f"notebook {path} does not exist: see `ls {settings.notebooks_dir()}`.") from None
    except json.JSONDecodeError as exc:
        raise ConfigError(f"notebook {path} is not valid JSON ({exc}): restore it from git.") from None


def notebook_parameters(path: Path | str) -> dict[str, Any]:
    """The literal defaults of the cell tagged `parameters` (raises if it holds anything but literals)."""
    path = resolve_notebook(path)
    st = path.stat()
    return copy.deepcopy(_notebook_parameters(str(path), st.st_mtime_ns, st.st_size))


@lru_cache(maxsize=32)
def _notebook_parameters(name: str, mtime_ns: int, size: int) -> dict[str, Any]:
    path = Path(name)
    nb = _load_nb(path)
    cells = [c for c in nb.get("cells", []) if "parameters" in c.get("metadata", {}).get("tags", [])]
    if len(cells) != 1:
        raise ConfigError(f"{path.name} must have exactly one cell tagged 'parameters' (found {len(cells)}).")
    src = "".join(cells[0].get("source", []))
    _check_papermill_reads(path, src)
    try:
        tree = ast.parse(src)
    except SyntaxError as exc:
        raise ConfigError(f"{path.name}: the parameters cell is not valid Python ({exc.msg}, line {exc.lineno}).") from None
    params: dict[str, Any] = {}
    for node in tree.body:
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            continue  # a docstring-like comment string
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value is not None:
            target, value = node.target.id, node.value
        elif isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            target, value = node.targets[0].id, node.value
        else:
            raise ConfigError(f"{path.name}: the parameters cell may hold only `name = literal` lines (line {node.lineno}).")
        try:
            params[target] = ast.literal_eval(value)
        except ValueError:
            raise ConfigError(
                f"{path.name}: parameter '{target}' is not a literal (line {node.lineno}); compute derived values in the next cell."
            ) from None
    return params


def _check_papermill_reads(path: Path, src: str) -> None:
    """papermill must read the same parameter names as the runner, or it warns falsely on every run.

    papermill's parser skips any line with more than one '=' (a comment such as `# 0 = all`), then reports
    that parameter as unknown ("Unable to parse line" / "Passed unknown parameter"). Such a line is refused
    here, naming it, so that every warning a run log shows is a real one.
    """
    import logging

    from papermill.translators import PythonTranslator

    try:
        tree = ast.parse(src)
    except SyntaxError:
        return  # reported by the caller
    ours = {}
    for node in tree.body:
        target = node.target if isinstance(node, ast.AnnAssign) else (node.targets[0] if isinstance(node, ast.Assign) and node.targets else None)
        if isinstance(target, ast.Name):
            ours[target.id] = node.lineno
    log = logging.getLogger("papermill.translators")
    level, log.level = log.level, logging.ERROR  # this probe's own warnings are the false alarms themselves
    try:
        theirs = {p.name for p in PythonTranslator.inspect({"source": src})}
    finally:
        log.level = level
    missing = [name for name in ours if name not in theirs]
    if missing:
        lineno = ours[missing[0]]
        line = src.splitlines()[lineno - 1].strip()
        raise ConfigError(
            f"{path.name}: papermill cannot read line {lineno} of the parameters cell ({line[:80]!r}), so it would "
            f"warn 'Passed unknown parameter: {missing[0]}' on every run: keep '=' out of its comment "
            f"(write '0: all', not '0 = all')."
        )


def validate_parameters(notebook: Path | str, overrides: Mapping[str, Any], strict: bool = True) -> dict[str, Any]:
    """Check overrides against the notebook's parameters (`schema.check_parameters`); the merged parameters.

    `strict=False` drops names the notebook does not have instead of refusing them.
    """
    path = resolve_notebook(notebook)
    defaults = notebook_parameters(path)
    if not strict:
        overrides = {k: v for k, v in overrides.items() if k in defaults}
    return schema.check_parameters(path.name, defaults, overrides)


def resolve_notebook(notebook: Path | str) -> Path:
    p = Path(notebook)
    candidates = [p] if p.is_absolute() else [settings.notebooks_dir() / p, settings.repo_root() / p, Path.cwd() / p]
    for c in candidates:
        try:
            if c.suffix != ".ipynb":
                c = c.with_suffix(".ipynb")
            if c.exists():
                return c.resolve()
        except (OSError, ValueError):  # a name too long for the file system, or one no path can hold
            continue
    names = sorted(x.name for x in settings.notebooks_dir().glob("*.ipynb"))
    short = str(notebook)[:200]
    hint = schema.closest(Path(short).name, names) or schema.closest(Path(short).stem, [Path(n).stem for n in names])
    raise ConfigError(f"notebook {shown(str(notebook), 80)} not found;{hint} available: {', '.join(names)}.")
