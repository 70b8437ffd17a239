"""The nn.Module scope a node was created in ("encoder.layer1"), for traces and graphs.

nn.Module.__call__ pushes its qualified name while tracing or anomaly mode is on; nodes
recorded meanwhile take the innermost scope.
"""

from __future__ import annotations

_stack: list[str] = []


def current_scope() -> str | None:
    return _stack[-1] if _stack else None


def push(name: str) -> None:
    _stack.append(name)


def pop() -> None:
    if _stack:
        _stack.pop()
