"""Observing real PyTorch programs into the same Trace as tracegrad's own engine.

``tracegrad.record()`` arms the bridge for as long as it records: at once when the program
has imported torch, otherwise the moment it does (an import hook, removed with the
recording). The bridge then makes the listener calls tracegrad's engine makes, from
torch's public hooks (see ``session.py``), so the recorder, the exporter, the TUI and the
graph assertions work on a program that keeps ``import torch``::

    import torch, tracegrad
    with tracegrad.record() as tr:
        loss = model(x).pow(2).sum(); loss.backward()

``tracegrad.tracing.from_tensor``, ``to_dot``, ``render`` and ``graph_text`` accept a torch
tensor as well (``as_tracegrad_tensor``).

Importing this package imports no torch; nothing here imports it unless the program did.
"""

from __future__ import annotations

import sys
import threading

_lock = threading.Lock()
_session = None  # the running Session, while at least one recording is armed
_users = 0  # recordings armed
_watcher = None  # the import hook, while waiting for the program to import torch


def torch_module():
    """torch, if the program imported it (never imports it)."""
    torch = sys.modules.get("torch")
    # A torch still being imported has no Tensor yet: not usable (and not ours to finish).
    return torch if torch is not None and hasattr(torch, "overrides") else None


def is_torch_tensor(value) -> bool:
    torch = torch_module()
    return torch is not None and isinstance(value, torch.Tensor)


def as_tracegrad_tensor(value):
    """``value`` as the graph builder reads tensors: a torch tensor becomes an adapter over
    a one-off registry (holding its graph while it is read), a tuple of torch tensors a tuple
    of adapters over one registry; anything else is returned as it is."""
    if isinstance(value, tuple) and value and all(is_torch_tensor(item) for item in value):
        from .walk import adapters_for_walk

        return adapters_for_walk(value)
    if not is_torch_tensor(value):
        return value
    from .walk import adapters_for_walk

    return adapters_for_walk((value,))[0]


class Attachment:
    """What ``attach`` returns: ``detach()`` disarms (once) and sets ``used``: whether the
    bridge reported anything from torch while this recording was armed."""

    def __init__(self) -> None:
        self._attached = True
        self._start = (_session, _session.emitted if _session is not None else 0)
        self.used = False

    def detach(self) -> None:
        global _users
        if not self._attached:
            return
        self._attached = False
        session = _session
        if session is not None:
            started_with, emitted = self._start
            self.used = session.emitted > (emitted if session is started_with else 0)
        with _lock:
            _users -= 1
            if _users == 0:
                _disarm()


def attach() -> Attachment:
    """Arm the bridge for one recording (see the module docstring)."""
    global _users
    with _lock:
        _users += 1
        if _users == 1:
            if torch_module() is not None:
                _start_session()
            else:
                _install_watcher()
    return Attachment()


def _start_session() -> None:
    global _session
    from .session import Session

    session = Session()
    session.start()
    _session = session


def _disarm() -> None:
    global _session, _watcher
    if _watcher is not None:
        _watcher.remove()
        _watcher = None
    if _session is not None:
        session, _session = _session, None
        session.stop()


def _install_watcher() -> None:
    global _watcher
    from ._arming import TorchImportWatcher

    _watcher = TorchImportWatcher(_torch_imported)
    _watcher.install()


def _torch_imported() -> None:
    """The program just imported torch while a recording was waiting for it."""
    global _watcher
    with _lock:
        if _users > 0 and _session is None:
            _watcher = None
            _start_session()
