"""File writes that lose nothing and follow no links.

- Atomic writes: readers see the old content or the new, never half of it (temp file + os.replace). The
  new file gets the permissions of the file it replaces, or the process umask's (0666 & ~umask) for a
  new one, so a group sharing a results folder (umask 002) can read and write what its members record.
- `open_in_folder`: a file inside a shared folder (a run folder) opened without following a symbolic
  link at the folder or at the file, refusing hard links and anything that is not a regular file. In a
  folder that several users can write, anyone could put a link there pointing at another user's file;
  writing through it would destroy that file, so kgrag refuses it in one line that names the link.
"""

from __future__ import annotations

import errno
import os
import stat
import uuid
from pathlib import Path

from .errors import KgragError

_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_DIRECTORY = getattr(os, "O_DIRECTORY", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)


class UnsafeFileError(KgragError):
    """A path in a shared folder is a link (or not a plain file): it is never followed or written."""


def _link_message(path: Path, what: str) -> str:
    try:
        target = f" (pointing at {os.readlink(path)})"
    except OSError:
        target = ""
    return (f"{path} is {what}{target}: kgrag follows no links inside a results folder, where anyone who can "
            f"write the folder could point one at another user's file; remove it (`rm {path}`) and rerun.")


def refuse_link(path: Path | str, what: str = "file") -> None:
    """One-line `UnsafeFileError` when `path` is a symbolic link (lstat; a missing path is fine)."""
    path = Path(path)
    if path.is_symlink():
        raise UnsafeFileError(_link_message(path, f"a symbolic link, not a {what}"))


def open_in_folder(folder: Path | str, name: str, flags: int, mode: int = 0o666) -> int:
    """`os.open(folder/name)` following no link at `folder` or at `name`; a raw fd (the caller closes it).

    Refused in one line: a link at either place, a file with other hard links (writing it would change
    another file too) and anything but a regular file (a FIFO, a device).
    """
    folder = Path(folder)
    truncate, flags = bool(flags & os.O_TRUNC), flags & ~os.O_TRUNC  # truncated only once found safe
    if os.open in os.supports_dir_fd and _NOFOLLOW:
        try:
            dfd = os.open(folder, os.O_RDONLY | _DIRECTORY | _NOFOLLOW | _CLOEXEC)
        except OSError as exc:
            if exc.errno in (errno.ELOOP, errno.ENOTDIR) and folder.is_symlink():
                raise UnsafeFileError(_link_message(folder, "a symbolic link, not a folder")) from None
            raise
        try:
            fd = os.open(name, flags | _NOFOLLOW | _CLOEXEC | getattr(os, "O_NONBLOCK", 0), mode, dir_fd=dfd)
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise UnsafeFileError(_link_message(folder / name, "a symbolic link, not a file")) from None
            if exc.errno == errno.ENXIO:  # a FIFO nobody reads
                raise UnsafeFileError(f"{folder / name} is not a regular file: kgrag writes only plain files in "
                                      f"a results folder; move it away and rerun.") from None
            exc.filename = str(folder / name)  # opened relative to dir_fd: name the whole path in messages
            raise
        finally:
            os.close(dfd)
    else:  # pragma: no cover - platforms without O_NOFOLLOW / dir_fd (Windows): lstat checks only
        refuse_link(folder, "folder")
        refuse_link(folder / name)
        fd = os.open(folder / name, flags | _CLOEXEC, mode)
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):
        os.close(fd)
        raise UnsafeFileError(f"{folder / name} is not a regular file: kgrag writes only plain files in a results "
                              f"folder; move it away and rerun.")
    if st.st_nlink > 1 and flags & (os.O_WRONLY | os.O_RDWR):
        os.close(fd)
        raise UnsafeFileError(f"{folder / name} has {st.st_nlink} hard links: writing it would change the other "
                              f"copies too (another user's file?); replace it by a copy (`cp --remove-destination`) "
                              f"or move it away, and rerun.")
    if hasattr(os, "set_blocking"):
        os.set_blocking(fd, True)
    if truncate:
        os.ftruncate(fd, 0)
    return fd


def _mode_of(path: Path) -> int | None:
    try:
        st = os.lstat(path)
    except OSError:
        return None
    return stat.S_IMODE(st.st_mode) if stat.S_ISREG(st.st_mode) else None


def atomic_write_bytes(path: Path | str, data: bytes) -> None:
    """Write `data` to a temporary file beside `path`, fsync it, then move it into place.

    A link at `path` is replaced (never followed); the new file keeps the replaced file's permissions.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.parent / f".{path.name}.{uuid.uuid4().hex[:12]}.tmp"
    keep = _mode_of(path)
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | _CLOEXEC, 0o666)  # umask applies
    try:
        with os.fdopen(fd, "wb") as fh:
            if keep is not None and hasattr(os, "fchmod"):
                os.fchmod(fh.fileno(), keep)
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def atomic_write_text(path: Path | str, text: str) -> None:
    atomic_write_bytes(path, text.encode("utf-8"))


#: a temporary file of an atomic write (`atomic_write_bytes`: `.<name>.<hex>.tmp`) older than this, in a
#: run folder this process has locked, was left by a writer that was killed: it is removed
STALE_TMP_S = 60.0


def remove_stale_temps(run_dir: Path) -> int:
    """Remove the temporary files killed writers left in a locked run folder (regular files only); how many."""
    import time

    removed, now = 0, time.time()
    try:
        names = os.listdir(run_dir)
    except OSError:
        return 0
    for name in names:
        if not (name.startswith(".") and name.endswith(".tmp")):
            continue
        try:
            st = os.lstat(run_dir / name)
            if stat.S_ISREG(st.st_mode) and now - st.st_mtime > STALE_TMP_S:
                os.unlink(run_dir / name)
                removed += 1
        except OSError:
            continue
    return removed
