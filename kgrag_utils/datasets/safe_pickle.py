"""Read pickled benchmark files without letting them run code.

FactKG ships its claims and its DBpedia graph as pickles. A pickle can name any importable callable
(`os.system`, `builtins.eval`, ...) and have it called while loading, so `pickle.load` on a
downloaded file is arbitrary code execution. `safe_load` uses an unpickler that admits ONLY plain
data: the builtin containers dict, list, tuple, set and frozenset, and str, int, float, bool and
None (plus bytes, which pickle also encodes natively). Every other global the file asks for is
refused with `UnsafePickleError` before it is imported, so nothing outside that list is ever
constructed or called.

Two data-only containers from `collections` (OrderedDict, defaultdict) can be admitted on request
with `allow=` for files that happen to use them; nothing else can be admitted at all.
"""

from __future__ import annotations

import io
import pickle
from pathlib import Path
from typing import Iterable

from ..errors import DatasetMissingError, IntegrityError

__all__ = ["UnsafePickleError", "SafeUnpickler", "safe_load", "safe_loads", "ALLOWED_BUILTINS", "OPTIONAL_CLASSES"]

#: The builtin containers a pickle may construct through a global reference (str, int, float,
#: bool, None, bytes, list, dict and tuple have their own opcodes and need no global at all).
ALLOWED_BUILTINS = frozenset({"dict", "list", "tuple", "set", "frozenset", "str", "int", "float", "bool", "bytes"})
#: Data-only containers that may be admitted explicitly with `allow=` (never by default).
OPTIONAL_CLASSES = frozenset({"collections.OrderedDict", "collections.defaultdict"})


class UnsafePickleError(IntegrityError, pickle.UnpicklingError):
    """The pickle asked for something other than plain data (a class, a function, a module)."""


class SafeUnpickler(pickle.Unpickler):
    """An unpickler whose `find_class` admits only builtin containers (and, on request, OPTIONAL_CLASSES)."""

    def __init__(self, file, *, allow: Iterable[str] = (), source: str = "the pickle"):
        super().__init__(file)
        extra = set(allow)
        unknown = extra - OPTIONAL_CLASSES
        if unknown:
            raise UnsafePickleError(
                f"cannot admit {sorted(unknown)[0]!r}: only {', '.join(sorted(OPTIONAL_CLASSES))} may be allowed."
            )
        self._allowed = extra
        self._source = source

    def find_class(self, module: str, name: str):
        if module in ("builtins", "__builtin__") and name in ALLOWED_BUILTINS:
            import builtins

            return getattr(builtins, name)
        if f"{module}.{name}" in self._allowed:
            import collections

            return getattr(collections, name)
        hint = (f"; it is data-only, pass allow=('{module}.{name}',) to admit it"
                if f"{module}.{name}" in OPTIONAL_CLASSES else "")
        raise UnsafePickleError(
            f"{self._source} asks for {module}.{name}, which the safe loader refuses "
            f"(only builtin containers, str, int, float, bool and None are admitted){hint}."
        )

    def persistent_load(self, pid):  # pragma: no cover - the default already refuses; be explicit
        raise UnsafePickleError(f"{self._source} uses persistent ids, which the safe loader refuses.")


def safe_loads(data: bytes, allow: Iterable[str] = (), source: str = "the pickle"):
    """Unpickle bytes admitting only plain data (see the module docstring)."""
    try:
        return SafeUnpickler(io.BytesIO(data), allow=allow, source=source).load()
    except UnsafePickleError:
        raise
    except (pickle.UnpicklingError, EOFError, ValueError, TypeError, AttributeError, IndexError) as exc:
        raise IntegrityError(f"{source} is not a readable pickle ({exc.__class__.__name__}: {exc}); "
                             "re-fetch it.") from None


def safe_load(path: Path | str, allow: Iterable[str] = ()):
    """Unpickle a file admitting only plain data; a missing file raises DatasetMissingError."""
    path = Path(path)
    if not path.is_file():
        raise DatasetMissingError(f"file {path} not found")
    with open(path, "rb") as fh:
        try:
            return SafeUnpickler(fh, allow=allow, source=str(path)).load()
        except UnsafePickleError:
            raise
        except (pickle.UnpicklingError, EOFError, ValueError, TypeError, AttributeError, IndexError) as exc:
            raise IntegrityError(f"{path} is not a readable pickle ({exc.__class__.__name__}: {exc}); "
                                 "re-fetch it.") from None
