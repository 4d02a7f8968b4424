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


# ----------------------------------------------------------------------------- "did you mean"
_LARGE_POOL = 50_000  # above this many names, only names sharing the first two letters are compared


def close_matches(name, choices, n: int = 1, cutoff: float = 0.6) -> list[str]:
    """Up to `n` valid names closest to a misspelled one: a case-insensitive exact match first, else difflib.

    Bounded work for millions of names (a KG's entities): above 50,000 choices only those sharing
    the first two letters (case-folded) are compared.
    """
    import difflib

    import numpy as np

    name = str(name)
    pool = np.asarray(choices if isinstance(choices, np.ndarray) else list(choices), dtype=object)
    if pool.size == 0:
        return []
    folded = name.casefold()
    if pool.size > _LARGE_POOL:
        import pandas as pd

        lowered = pd.Series(pool, dtype=object).astype(str).str.casefold()
        exact = pool[(lowered == folded).to_numpy()]
        if exact.size:
            return [str(x) for x in exact[:n]]
        prefix = folded[:2]
        pool = pool[lowered.str.startswith(prefix).to_numpy()][:_LARGE_POOL] if prefix else pool[:0]
    else:
        exact = [str(x) for x in pool if str(x).casefold() == folded]
        if exact:
            return exact[:n]
    return difflib.get_close_matches(name, [str(x) for x in pool], n=n, cutoff=cutoff)


def did_you_mean(name, choices, n: int = 1, cutoff: float = 0.6, renamed: "dict[str, str] | None" = None) -> str:
    """"did you mean 'a', 'b'?" for the closest valid names (`close_matches`), or "" when none is close.

    The one way every refusal of an unknown name suggests the fix; callers add the punctuation
    around it (" (did you mean 'x'?)", "; did you mean 'x'?"). `renamed` maps old names to their
    new ones: an old name is matched too, and the new one suggested.
    """
    renamed = renamed or {}
    hits = close_matches(name, [*choices, *renamed] if renamed else choices, n=n, cutoff=cutoff)
    hits = list(dict.fromkeys(renamed.get(h, h) for h in hits))
    return f"did you mean {', '.join(repr(h) for h in hits)}?" if hits else ""


class DatasetFormatError(KgragError, ValueError):
    """A data file that is not in its format (not UTF-8, a line that does not parse): the file and line named."""


def shown(value, limit: int = 80) -> str:
    """A short repr of `value` (at most `limit` characters, nested containers elided), so that a message
    stays one short line whatever it quotes, and costs little to build even for a huge value."""
    import reprlib

    short = reprlib.Repr()
    short.maxlevel, short.maxlist, short.maxtuple, short.maxdict, short.maxset = 3, 6, 6, 6, 6
    short.maxstring = short.maxother = max(limit - 10, 12)
    text = short.repr(value).replace("\n", "\\n")
    if isinstance(value, str) and len(value) > limit:
        text = f"{text} ({len(value):,} characters)"
    return text if len(text) <= limit + 24 else f"{text[:limit]}..."


class StorageError(KgragError):
    """A folder kgrag must write is full, read-only or not ours: one line naming it, the cause and the fix."""


#: errno -> (what happened, what to do about it) for the failures of writing a folder
_STORAGE = {
    "ENOSPC": ("no space left on the device", "free space there, or set {var} to a folder with room"),
    "EDQUOT": ("the disk quota is used up", "free space there, or set {var} to a folder with room"),
    "EROFS": ("the file system is read-only", "mount it writable, or set {var} to a writable folder"),
    "EACCES": ("permission denied", "make it writable for you (`chmod u+w`, or ask its owner), or set {var} to "
                                    "a folder of your own"),
    "EPERM": ("the operation is not permitted", "make it writable for you, or set {var} to a folder of your own"),
}


def storage_errno(exc: BaseException) -> bool:
    """Whether `exc` is an OSError of a full, read-only or forbidden folder (see `storage_message`)."""
    import errno

    return isinstance(exc, OSError) and errno.errorcode.get(exc.errno or -1) in _STORAGE


def storage_message(exc: OSError, folder, var: str = "KGRAG_RESULTS_DIR") -> str:
    """One line for a failed write: the file or folder, the cause (with its errno name) and the fix."""
    import errno

    name = errno.errorcode.get(exc.errno or -1, "")
    cause, fix = _STORAGE.get(name, (exc.strerror or str(exc), "check the folder, or set {var} to another one"))
    where = exc.filename or folder
    kept = " (what was written before is kept; a rerun resumes)" if name in ("ENOSPC", "EDQUOT") else ""
    return f"cannot write {where}: {cause} ({name or exc.errno}): {fix.format(var=var)}{kept}."


#: errno -> what is wrong with a folder path that cannot be made (beyond the write failures of `_STORAGE`)
_PLACE = {
    "ENOENT": "it cannot be created there (a parent is missing or not a real folder)",
    "EEXIST": "it exists and is not a folder",
    "ENOTDIR": "a part of its path is a file, not a folder",
    "ENAMETOOLONG": "the name is too long for the file system",
    "ELOOP": "its path has a loop of links",
}


def folder_message(exc: OSError, folder, var: str) -> str:
    """One line for a folder a variable names that cannot be used: the folder, the variable, the cause, the fix."""
    import errno

    name = errno.errorcode.get(exc.errno or -1, "")
    if name in _STORAGE:
        return storage_message(exc, folder, var)
    cause = _PLACE.get(name, exc.strerror or str(exc))
    return (f"cannot use {shown(str(folder), 120)} as {var}: {cause} ({name or exc.errno}): set {var} to a folder "
            f"you can create and write.")


def cache_write_skipped(exc: OSError, path, what: str) -> None:
    """A derived cache file that cannot be written (full, read-only or forbidden cache folder): one warning
    naming it and KGRAG_CACHE_DIR; the value is recomputed next time. Other errors are raised."""
    import warnings

    if not storage_errno(exc):
        raise exc
    warnings.warn(f"{what} not cached: {storage_message(exc, path, 'KGRAG_CACHE_DIR')}", RuntimeWarning, stacklevel=3)
