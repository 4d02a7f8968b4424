"""What a run is checked for before a kernel starts (runs and grids alike): parameters, run name,
the method's config, known names and the data on disk."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping

from .. import schema
from ..errors import ConfigError
from ..notebook_params import resolve_notebook, validate_parameters
from ..records import check_run_name

__all__ = ["check_run_parameters", "check_method_config", "check_data_present", "check_known_names"]


def check_run_parameters(notebook: Path | str, overrides: Mapping[str, Any]) -> dict[str, Any]:
    """Everything a run is checked for before a kernel starts (runs and grids alike); the merged parameters."""
    path = resolve_notebook(notebook)
    params = validate_parameters(path, overrides)
    if params.get("run_name"):
        check_run_name(params["run_name"])
    check_method_config(path, params)
    return params


def check_method_config(path: Path, params: Mapping[str, Any]) -> None:
    """A registered method notebook's parameters must also build its config (choices, ranges, combinations)."""
    from pydantic import ValidationError

    from ..methods.registry import method_for_notebook

    spec = method_for_notebook(path.name)
    config_class = spec.config_class if spec is not None else None
    if config_class is None:
        return
    try:
        config_class.from_params(params)
    except ConfigError as exc:
        raise ConfigError(f"{path.name}: {exc}") from None
    except ValidationError as exc:
        err = exc.errors()[0]
        raise ConfigError(f"{path.name}: {'.'.join(map(str, err['loc']))}: {err['msg']} (got {err.get('input')!r}).") from None


def check_data_present(params: Mapping[str, Any]) -> None:
    """The datasets a run names are on disk (real copies; samples are generated): else one line naming the fetch."""
    from ..datasets.registry import require_present

    for key in schema.dataset_parameters(params):
        if isinstance(params[key], str) and params[key]:
            require_present(params[key])


def check_known_names(path: Path | str, params: Mapping[str, Any]) -> None:
    """Dataset names (and splits) and LLM presets must exist (see `schema.check_known_names`)."""
    schema.check_known_names(Path(path).name, params)
