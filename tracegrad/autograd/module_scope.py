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


def current_scope() -> str | None:
    stack = _scopes.stack
    return stack[-1] if stack else None


def push(name: str) -> None:
    _scopes.stack.append(name)


def pop() -> None:
    stack = _scopes.stack
    if stack:
        stack.pop()
