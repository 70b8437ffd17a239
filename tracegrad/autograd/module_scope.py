"""The nn.Module scope a node was created in ("encoder.layer1"), for traces and graphs.

nn.Module.__call__ pushes its qualified name while tracing or anomaly mode is on; nodes
recorded meanwhile take the innermost scope. The stack is per thread: a module running in
one thread never lends its name to nodes another thread makes.
"""

from __future__ import annotations

import threading


class _Scopes(threading.local):
    def __init__(self) -> None:
        self.stack: list[str] = []


_scopes = _Scopes()
# scope name -> the class of the module last called under it ("0" -> "Linear"), so a
# picture can label a scope "0: Linear"; read by the recorder when it stops. Shared by
# threads: one dict assignment per call is atomic, and a name means one class in a model.
_classes: dict[str, str] = {}


def current_scope() -> str | None:
    stack = _scopes.stack
    return stack[-1] if stack else None


def push(name: str, class_name: str | None = None) -> None:
    _scopes.stack.append(name)
    if class_name is not None:
        _classes[name] = class_name


def class_of(name: str) -> str | None:
    """The class name of the module called under scope ``name``, if one was."""
    return _classes.get(name)


def pop() -> None:
    stack = _scopes.stack
    if stack:
        stack.pop()
