"""Reading a dataset's text files: UTF-8, lines split on newlines only, a bad byte named by file and line.

`str.splitlines()` also splits on U+2028, U+2029, U+0085, form feeds and other separators that can sit
inside one question, so a file read that way has more lines than it has, and its question and type files
no longer align. These readers split on "\\n" only (a "\\r" before it is dropped), and a byte that is not
UTF-8 is one line naming the file, the line, the byte and the fix, at load, not a bare UnicodeDecodeError
position inside a kernel.
"""

from __future__ import annotations

from pathlib import Path

from ..errors import DatasetFormatError

__all__ = ["decode_utf8", "read_text", "read_lines"]


def decode_utf8(data: bytes, path: Path | str) -> str:
    """`data` decoded as UTF-8 (a leading BOM dropped); else a DatasetFormatError naming the line and byte."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        column = exc.start - (data.rfind(b"\n", 0, exc.start) + 1) + 1
        raise DatasetFormatError(
            f"{path}, line {line:,}, byte {column:,}: 0x{data[exc.start]:02x} is not UTF-8 ({exc.reason}): "
            f"save the file as UTF-8 (e.g. `iconv -f latin1 -t utf-8`), or refetch it with `kgrag data fetch`."
        ) from None
    return text[1:] if text.startswith("\ufeff") else text


def read_text(path: Path | str) -> str:
    """A UTF-8 file's text (see `decode_utf8`)."""
    return decode_utf8(Path(path).read_bytes(), path)


def read_lines(path: Path | str) -> list[str]:
    """A UTF-8 file's lines, split on "\\n" only (and "\\r\\n"), without the trailing blank lines."""
    lines = read_text(path).split("\n")
    lines = [ln[:-1] if ln.endswith("\r") else ln for ln in lines]
    while lines and not lines[-1].strip():
        lines.pop()
    return lines
