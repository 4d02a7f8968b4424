"""Schemas for grids and run parameters, checked before any kernel starts (runs and grids alike).

- A grid YAML is a `GridSpec` (top-level keys `name`, `defaults`, `timeout`, `runs`, `final`,
  `final_parameters`), its runs `RunSpec`s (`notebook`, `parameters`, `grid`); unknown keys are refused.
- A run's parameters are checked against a model built from the notebook's `parameters` cell (its
  literals give each parameter's name, type and default), then against value rules (`limit` and
  `seed` at least 0) and known names (datasets and their splits, LLM presets).

Every refusal is one line that names the place and the fix, with the closest valid key (difflib) when a
name looks like a typo.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Any, Iterable, Mapping, Union

from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictFloat, StrictInt, StrictStr, ValidationError, create_model

from .errors import ConfigError, did_you_mean, shown

DEFAULT_TIMEOUT = 3600  # seconds per cell
MAX_YAML_VALUES = 100_000  # values a grid may expand to, aliases counted once per use (an alias bomb stops here)
MAX_GRID_RUNS = 10_000  # runs a grid's axes may multiply out to


def closest(word: Any, choices: Iterable[str]) -> str:
    """' did you mean 'x'?' for the nearest valid name, or '' when nothing is near (`errors.did_you_mean`,
    with the leading space these one-line refusals put after their ';')."""
    tip = did_you_mean(word, choices)
    return f" {tip}" if tip else ""


# ----------------------------------------------------------------------------- grid YAML
class RunSpec(BaseModel):
    """One entry of a grid's `runs:` list."""

    model_config = ConfigDict(extra="forbid")
    notebook: StrictStr
    parameters: dict[str, Any] = Field(default_factory=dict)
    grid: dict[str, Any] = Field(default_factory=dict)


class GridSpec(BaseModel):
    """A grid config (configs/NAME.yaml)."""

    model_config = ConfigDict(extra="forbid")
    name: StrictStr | None = None
    defaults: dict[str, Any] = Field(default_factory=dict)
    timeout: StrictInt = Field(DEFAULT_TIMEOUT, gt=0)
    runs: list[RunSpec] = Field(min_length=1)
    final: StrictStr | None = None
    final_parameters: dict[str, Any] = Field(default_factory=dict)


_HELP = {
    "name": "a plain name, e.g. name: demo",
    "defaults": "a mapping of parameters merged into every run that has them, e.g. defaults: {limit: 8}",
    "timeout": "a whole number of seconds per cell, e.g. timeout: 1800",
    "runs": "a non-empty list of {notebook, parameters, grid} entries",
    "final": "a notebook run last, e.g. final: 05_report.ipynb",
    "final_parameters": "a mapping of the final notebook's parameters, e.g. final_parameters: {include_benchmarks: false}",
    "notebook": "a notebook file name, e.g. notebook: 01_simgrag.ipynb",
    "parameters": "a mapping name: value, e.g. parameters: {limit: 8, dataset: sample-movies-2hop}",
    "grid": "a mapping of parameter lists whose cartesian product is run, e.g. grid: {dataset: [metaqa-1hop, metaqa-2hop]}",
}


def _where(loc: tuple, source: str, raw: Any) -> tuple[str, type[BaseModel]]:
    if len(loc) >= 2 and loc[0] == "runs" and isinstance(loc[1], int):
        entry = raw.get("runs")[loc[1]] if isinstance(raw, Mapping) and isinstance(raw.get("runs"), list) else None
        nb = f" ({entry.get('notebook')})" if isinstance(entry, Mapping) and entry.get("notebook") else ""
        return f"{source}, run #{loc[1] + 1}{nb}", RunSpec
    return source, GridSpec


def grid_error(exc: ValidationError, source: str, raw: Any) -> ConfigError:
    """The first schema error of a grid as one line naming the place and the fix."""
    err = exc.errors()[0]
    loc, kind, value = tuple(err["loc"]), err["type"], err.get("input")
    where, model = _where(loc, source, raw)
    field = str(loc[-1]) if loc else ""
    keys = list(model.model_fields)
    if kind == "extra_forbidden":
        level = "run" if model is RunSpec else "top-level"
        msg = f"unknown {level} key {field!r};{closest(field, keys) or ''} valid keys: {', '.join(keys)}."
    elif kind == "missing":
        msg = f"missing key {field!r}: {_HELP.get(field, 'required')}."
    elif kind == "too_short" and field == "runs":
        msg = f"'runs' is empty: {_HELP['runs']}."
    elif kind in ("greater_than", "greater_than_equal") and field == "timeout":
        msg = f"'timeout' must be positive: {_HELP['timeout']} (got {shown(value)})."
    elif field in _HELP:
        msg = f"{field!r} must be {_HELP[field]}; got {type(value).__name__} {shown(value)}."
    else:
        msg = f"{'.'.join(map(str, loc))}: {err['msg']} (got {shown(value)})."
    return ConfigError(f"{where}: {msg}")


class _DuplicateKey(Exception):
    """A mapping that names one key twice (YAML would silently keep the last value)."""


@lru_cache(maxsize=1)
def _strict_loader():
    """yaml.SafeLoader, except that a key given twice in one mapping is refused (merge keys `<<` may be overridden)."""
    import yaml

    class StrictLoader(yaml.SafeLoader):
        pass

    def mapping(loader, node):
        seen: dict[Any, int] = {}
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge" or not isinstance(key_node, yaml.ScalarNode):
                continue
            key = loader.construct_object(key_node)
            line = key_node.start_mark.line + 1
            if key in seen:
                raise _DuplicateKey(f"the key {shown(key, 40)} appears twice in one mapping (lines {seen[key]} and "
                                    f"{line}; YAML would keep only the last): keep one of them.")
            seen[key] = line
        yield from yaml.SafeLoader.construct_yaml_map(loader, node)  # a generator, so aliases may refer back

    StrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, mapping)
    return StrictLoader


def parse_grid(text: str, source: str) -> tuple[GridSpec, Any]:
    """A grid's YAML text -> (validated spec, the raw mapping); invalid YAML or shape is one line."""
    import yaml

    try:
        raw = yaml.load(text, Loader=_strict_loader())  # noqa: S506 - a SafeLoader that refuses duplicate keys
    except _DuplicateKey as exc:
        raise ConfigError(f"{source}: {exc}") from None
    except ValueError as exc:  # e.g. an integer of thousands of digits (Python's int() limit)
        raise ConfigError(f"{source} holds a value YAML cannot read ({shown(str(exc), 80)}): write it shorter.") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        at = f"line {mark.line + 1}, column {mark.column + 1}: " if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise ConfigError(f"{source} is not valid YAML ({at}{problem}): fix that line (quote values holding ': ' or '#').") from None
    if raw is None:
        raw = {}
    if not isinstance(raw, Mapping):
        raise ConfigError(f"{source} must be a mapping with keys {', '.join(GridSpec.model_fields)} "
                          f"(e.g. `runs:` followed by a list), not a {type(raw).__name__}.")
    return validate_grid(raw, source), raw


def check_yaml_size(value: Any, source: str, limit: int = MAX_YAML_VALUES) -> int:
    """The number of values `value` expands to, each alias counted at every use; refused over `limit`.

    YAML aliases (`&a` ... `*a`) share one object however often they are used, so a few lines can name
    billions of values (an "alias bomb") that validation, copying or an error message would expand. The
    count is memoised per shared object, so it costs one visit per distinct value; a value that contains
    itself is refused too.
    """
    sizes: dict[int, int] = {}
    active: set[int] = set()

    def size(v: Any) -> int:
        if not isinstance(v, (list, dict)):
            return 1
        key = id(v)
        if key in sizes:
            return sizes[key]
        if key in active:
            raise ConfigError(f"{source}: a YAML alias refers to a value that contains it (a loop): write the "
                              f"value out instead of the alias.")
        active.add(key)
        children = list(v.keys()) + list(v.values()) if isinstance(v, dict) else v
        total = 1
        for child in children:
            total += size(child)
            if total > limit:
                break
        active.discard(key)
        sizes[key] = total
        return total

    n = size(value)
    if n > limit:
        raise ConfigError(f"{source} expands to more than {limit:,} values (YAML aliases `*name` repeat what "
                          f"`&name` holds at every use, so nested aliases multiply): write the values out, or use "
                          f"fewer nested aliases.")
    return n


def check_grid_runs(source: str, run_no: int, axes: Mapping[str, Any], limit: int = MAX_GRID_RUNS) -> None:
    """A run's grid axes must not multiply out to more than `limit` runs (refused before any is built)."""
    total = 1
    for values in axes.values():
        total *= len(values) if isinstance(values, list) else 1
        if total > limit:
            raise ConfigError(f"{source}, run #{run_no}: its grid axes ({', '.join(axes)}) multiply out to more "
                              f"than {limit:,} runs: split the grid into several files, or shorten the axes.")


def validate_grid(raw: Mapping[str, Any], source: str) -> GridSpec:
    check_yaml_size(dict(raw), source)  # a grid built in Python gets the bound too
    try:
        spec = GridSpec.model_validate(dict(raw))
    except ValidationError as exc:
        raise grid_error(exc, source, raw) from None
    for i, run in enumerate(spec.runs):
        check_grid_runs(source, i + 1, run.grid)
        for axis, values in run.grid.items():
            if isinstance(values, list) and not values:
                raise ConfigError(f"{source}, run #{i + 1} ({run.notebook}): grid axis {axis!r} is an empty list, "
                                  f"which would drop the run: give it at least one value, or remove the axis.")
    return spec


# ----------------------------------------------------------------------------- run parameters
_SCALARS: dict[type, Any] = {bool: StrictBool, int: StrictInt, str: StrictStr, float: Union[StrictFloat, StrictInt]}

# Value rules by parameter name (types come from each notebook's defaults).
NON_NEGATIVE = ("limit", "take", "seed")
#: parameters that must be at least 1 where a notebook has them (0 or less tokens generates nothing)
POSITIVE = ("max_new_tokens",)


def _field_type(default: Any) -> Any:
    if default is None:
        return Any
    for kind, strict in _SCALARS.items():
        if type(default) is kind:
            return strict
    if isinstance(default, (list, tuple)):
        return Union[list, tuple]
    if isinstance(default, dict):
        return dict
    return type(default)


def _freeze(value: Any) -> Any:
    if isinstance(value, (list, tuple)):
        return ("__list__", tuple(_freeze(v) for v in value))
    if isinstance(value, dict):
        return ("__dict__", tuple(sorted((k, _freeze(v)) for k, v in value.items())))
    return value


def _thaw(value: Any) -> Any:
    if isinstance(value, tuple) and value and value[0] == "__list__":
        return [_thaw(v) for v in value[1]]
    if isinstance(value, tuple) and value and value[0] == "__dict__":
        return {k: _thaw(v) for k, v in value[1]}
    return value


@lru_cache(maxsize=64)
def _params_model(title: str, frozen: tuple) -> type[BaseModel]:
    fields = {name: (_field_type(_thaw(default)), _thaw(default)) for name, default in frozen}
    return create_model(f"{title}_parameters", __config__=ConfigDict(extra="forbid"), **fields)


def params_model(title: str, defaults: Mapping[str, Any]) -> type[BaseModel]:
    """A pydantic model of a notebook's parameters (names, types and defaults from its parameters cell)."""
    return _params_model(title, tuple(sorted((k, _freeze(v)) for k, v in defaults.items())))


def check_parameters(title: str, defaults: Mapping[str, Any], overrides: Mapping[str, Any]) -> dict[str, Any]:
    """Overrides checked against the notebook's parameters (names, types, value rules); the merged parameters."""
    model = params_model(title, defaults)
    for name in overrides:
        if name not in defaults:
            raise ConfigError(f"{title} has no parameter {shown(name)};{closest(name, defaults)} its parameters are: "
                              f"{', '.join(sorted(defaults))}.")
    try:
        model.model_validate(dict(overrides))
    except ValidationError as exc:
        name = str(exc.errors()[0]["loc"][0])
        value, default = overrides[name], defaults[name]
        raise ConfigError(f"parameter {name!r} of {title} expects {type(default).__name__} (default {shown(default)}), "
                          f"got {type(value).__name__} {shown(value)}.") from None
    merged = dict(defaults)
    merged.update({k: list(v) if isinstance(v, tuple) else v for k, v in overrides.items()})
    for name in NON_NEGATIVE:
        value = merged.get(name)
        if isinstance(value, int) and not isinstance(value, bool) and value < 0:
            raise ConfigError(f"parameter {name!r} of {title} must be at least 0 (default {defaults[name]!r}), "
                              f"got {shown(value)}.")
    for name in POSITIVE:
        value = merged.get(name)
        if isinstance(value, int) and not isinstance(value, bool) and value < 1:
            raise ConfigError(f"parameter {name!r} of {title} must be at least 1 (default {defaults[name]!r}), "
                              f"got {shown(value)}.")
    check_known_names(title, merged)
    return merged


def dataset_parameters(params: Mapping[str, Any]) -> list[str]:
    """The parameters that name a dataset: `dataset` and any `*_dataset` (e.g. kinship_dataset)."""
    return [k for k in params if k == "dataset" or k.endswith("_dataset")]


def check_known_names(title: str, params: Mapping[str, Any]) -> None:
    """Dataset names, their splits and LLM presets must exist (a typo would surface hours into a GPU grid)."""
    from .datasets.registry import dataset_names, get_spec
    from .datasets.userdata import is_folder_name
    from .llm import BACKENDS
    from .llm.presets import PRESETS

    names = dataset_names()
    for key in dataset_parameters(params):
        ds = params[key]
        if isinstance(ds, str) and ds and ds not in names and not is_folder_name(ds):
            raise ConfigError(f"{title}: unknown {key} {shown(ds)};{closest(ds, names)} `kgrag data list` shows the "
                              f"known datasets, or give a dataset folder (a path such as data/example-kg).")
    ds, split = params.get("dataset"), params.get("split")
    if isinstance(ds, str) and (ds in names or is_folder_name(ds)) and isinstance(split, str):
        splits = get_spec(ds).splits
        if split not in splits:
            raise ConfigError(f"{title}: dataset {ds!r} has no split {shown(split)};{closest(split, splits)} its splits "
                              f"are: {', '.join(splits)}.")
    backend = params.get("llm_backend")
    if isinstance(backend, str) and backend and backend not in BACKENDS:
        raise ConfigError(f"{title}: unknown llm_backend {shown(backend)};{closest(backend, BACKENDS)} use one of "
                          f"{', '.join(BACKENDS)}, or \"\" for the preset's default.")
    preset = params.get("llm_preset")
    known = [*PRESETS, "fake"]
    # a local model folder is a preset too: load_llm loads it (the GPU check runs random-weight ones)
    if isinstance(preset, str) and preset not in known and not Path(preset).is_dir():
        raise ConfigError(f"{title}: unknown llm_preset {shown(preset)};{closest(preset, known)} `kgrag presets` lists "
                          f"them.")


# ----------------------------------------------------------------------------- -p NAME=VALUE on the command line
_TRUE, _FALSE = {"true", "yes", "on", "1"}, {"false", "no", "off", "0"}


def cli_value(name: str, text: str, default: Any, title: str) -> Any:
    """A `-p name=text` value read against its parameter's declared type (the notebook's default).

    A string parameter takes the text as typed (`exp #3`, `off` and `2024-06-01` stay text); a bool takes
    true/false (yes/no, on/off, 1/0), an int a whole number, a float a number, a list or dict JSON (or YAML
    flow syntax). Anything else is refused in one line naming the parameter and how to write it.
    """
    def refuse(expects: str, example: str) -> ConfigError:
        return ConfigError(f"-p {name}={shown(text, 60)}: parameter {name!r} of {title} is {expects} (default "
                           f"{shown(default, 40)}): write e.g. -p {name}={example}.")

    raw = text.strip()
    if default is None or isinstance(default, str):
        return text
    if isinstance(default, bool):
        if raw.lower() in _TRUE | _FALSE:
            return raw.lower() in _TRUE
        raise refuse("true or false", "true")
    if isinstance(default, int):
        try:
            return int(raw)
        except ValueError:
            raise refuse("a whole number", default if default else 20) from None
    if isinstance(default, float):
        try:
            return float(raw)
        except ValueError:
            raise refuse("a number", default) from None
    if isinstance(default, (list, tuple, dict)):
        import yaml

        try:
            value = yaml.safe_load(raw)
        except (yaml.YAMLError, ValueError):  # ValueError: e.g. an integer of thousands of digits
            value = None
        check_yaml_size(value, f"-p {name}")
        wanted = dict if isinstance(default, dict) else (list, tuple)
        if not isinstance(value, wanted):
            example = "'{\"k\": 1}'" if isinstance(default, dict) else "'[1, 5, 10]'"
            raise refuse("a dict" if isinstance(default, dict) else "a list", example)
        return value
    return text


def cli_parameters(items: Iterable[str], defaults: Iterable[tuple[str, Mapping[str, Any]]]) -> dict[str, Any]:
    """`-p name=value` items typed by the first notebook (title, defaults) that has each name; a name none has
    stays text (the checks that follow refuse it, naming the closest valid one)."""
    defaults = list(defaults)
    out: dict[str, Any] = {}
    for item in items or []:
        if "=" not in item:
            raise ConfigError(f"parameter {shown(item, 60)} must be written name=value, e.g. -p limit=20.")
        name, text = item.split("=", 1)
        name = name.strip()
        owner = next(((title, d) for title, d in defaults if name in d), None)
        out[name] = cli_value(name, text, owner[1][name], owner[0]) if owner else text
    return out
