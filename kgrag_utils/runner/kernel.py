"""The kernel a run executes in: the project's `python3` kernelspec, local IPC sockets (one prefix per
kernel), and per-run environment variables; `execute` runs one notebook in it with papermill."""

from __future__ import annotations

import os
import sys
import threading
import uuid
from pathlib import Path
from typing import Any, Mapping

from ..errors import MissingDependencyError
from ..progress import text_progress_in_children

__all__ = ["KERNEL_START_TIMEOUT", "execute", "prefer_project_kernel", "require_papermill", "stop_kernels"]

KERNEL_START_TIMEOUT = 300  # seconds a kernel may take to start (papermill's 60 s fail on a loaded machine)


def prefer_project_kernel() -> None:
    """Make the `python3` kernel resolve to this interpreter's environment (a venv's sys-prefix kernelspec)."""
    share = Path(sys.prefix) / "share" / "jupyter"
    if (share / "kernels" / "python3").exists():
        paths = os.environ.get("JUPYTER_PATH", "")
        if str(share) not in paths.split(os.pathsep):
            os.environ["JUPYTER_PATH"] = os.pathsep.join(p for p in (str(share), paths) if p)


def _ipc_prefix() -> str | None:
    """A fresh IPC socket prefix in Jupyter's runtime folder, or None where IPC cannot serve (not POSIX,
    or a path too long for a UNIX socket)."""
    if os.name != "posix":
        return None
    from jupyter_core.paths import jupyter_runtime_dir

    runtime = Path(jupyter_runtime_dir())
    prefix = str(runtime / f"kgrag-{os.getpid()}-{uuid.uuid4().hex[:12]}-ipc")
    if len(prefix) + 4 > 100:  # sockets are "<prefix>-<n>"; UNIX socket paths hold about 104-108 bytes
        return None
    runtime.mkdir(parents=True, exist_ok=True)
    return prefix


def _kernel_manager_class(extra_env: Mapping[str, str], log=None):
    """A kernel manager that starts its kernel with these environment variables added (per run, thread-safe),
    and the kernel process's own stdout and stderr in the run's log (not the user's terminal: a kernel stopped
    at a cell timeout prints a traceback there)."""
    from jupyter_client.manager import AsyncKernelManager
    from traitlets import default

    extra = {str(k): str(v) for k, v in extra_env.items()}

    class RunKernelManager(AsyncKernelManager):
        @default("transport")
        def _transport_default(self):
            # local sockets, not TCP on 127.0.0.1: the kernel need not warn that TCP is unencrypted
            return "ipc" if _ipc_prefix() else "tcp"

        @default("ip")
        def _ip_default(self):
            # one socket prefix per kernel (jupyter's default, "kernel-ipc" in the cwd, is shared by
            # kernels started at the same time, which then collide)
            return _ipc_prefix() or super()._ip_default()

        async def start_kernel(self, **kw):
            env = dict(kw.pop("env", None) or os.environ)
            env.update(extra)
            if log is not None:
                kw.setdefault("stdout", log)
                kw.setdefault("stderr", log)
            started = await super().start_kernel(env=env, **kw)
            process = getattr(self.provisioner, "process", None)
            if process is not None:
                with _LOCK:
                    _KERNELS[:] = [p for p in _KERNELS if p.poll() is None] + [process]
            return started

    return RunKernelManager


_LOCK = threading.RLock()  # re-entrant: a signal handler in the main thread may stop kernels mid-registration
_KERNELS: list = []  # the kernel processes this runner started (Popen objects; pruned as they end)


def stop_kernels() -> int:
    """End every kernel this process started that still runs (on Ctrl-C or SIGTERM: no kernel outlives an
    interrupted runner, whatever thread ran it); how many were ended."""
    with _LOCK:
        alive = [p for p in _KERNELS if p.poll() is None]
        _KERNELS.clear()
    for process in alive:
        process.kill()
    for process in alive:
        try:
            process.wait(timeout=10)
        except Exception:  # noqa: BLE001 - a kernel that does not go is left to the OS; the runner still stops
            pass
    return len(alive)


def require_papermill():
    """The papermill module, or a one-line MissingDependencyError naming the install."""
    try:
        import papermill as pm
    except ImportError as exc:  # pragma: no cover
        raise MissingDependencyError("the batch runner needs papermill: run `pip install -e .`.") from exc
    return pm


def execute(path: Path, out_nb: Path, params: Mapping[str, Any], timeout: int, env: Mapping[str, str], log) -> None:
    """Run the notebook at `path` with papermill in a fresh `python3` kernel (cwd: its folder), writing the
    executed copy to `out_nb` and the kernel's output to the open file `log`; papermill's errors propagate."""
    pm = require_papermill()
    prefer_project_kernel()
    with text_progress_in_children():  # nobody watches this kernel's widgets: its bars print plain lines
        pm.execute_notebook(
            str(path), str(out_nb), parameters=dict(params), kernel_name="python3", cwd=str(path.parent),
            execution_timeout=timeout, start_timeout=KERNEL_START_TIMEOUT, progress_bar=False,
            log_output=False, stdout_file=log,
            stderr_file=_ShownOnTerminal(log), kernel_manager_class=_kernel_manager_class(env, log),
        )


class _ShownOnTerminal:
    """The notebook's stderr (its progress lines) for the run's log, also shown on the user's terminal when
    stderr is one; a pipe (a batch job, a test) gets only the runner's own lines, the kernel's stay in the log."""

    def __init__(self, log):
        self.log = log
        self.terminal = sys.stderr if _is_terminal(sys.stderr) else None

    def write(self, text: str) -> None:
        self.log.write(text)
        if self.terminal is not None:
            self.terminal.write(text)

    def flush(self) -> None:
        self.log.flush()
        if self.terminal is not None:
            self.terminal.flush()


def _is_terminal(stream) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):  # a replaced or closed stream
        return False
