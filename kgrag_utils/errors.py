"""One family of exceptions whose messages are a single line that says what to do."""

from __future__ import annotations


class KgragError(Exception):
    """Base class: every message should name the problem and the fix in one line."""


class ConfigError(KgragError, ValueError):
    """A parameter, preset, backend or dataset name that is not valid."""


class DatasetMissingError(KgragError, FileNotFoundError):
    """A dataset's files are not where the data directory says they should be."""


class MissingDependencyError(KgragError, ImportError):
    """An optional package is needed for the requested feature."""


class IntegrityError(KgragError):
    """A file failed verification (for example a sha256 mismatch)."""


class BackendUnavailableError(KgragError, ConnectionError):
    """A model server or backend could not be reached."""


def require(module: str, extra: str, feature: str):
    """Import an optional module or raise a one-line error naming the pip extra that provides it."""
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError as exc:  # pragma: no cover - exercised through tests with monkeypatch
        raise MissingDependencyError(
            f"{feature} needs the Python package '{module}', which is not installed: "
            f"run `pip install -e '.[{extra}]'` (or `pip install {module}`)."
        ) from exc
