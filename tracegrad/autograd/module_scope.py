"""The nn.Module scope a node was created in ("encoder.layer1"), for traces and graphs.

nn.Module.__call__ pushes its qualified name while tracing or anomaly mode is on; nodes
recorded meanwhile take the innermost scope.
"""

from __future__ import annotations

_stack: list[str] = []
# scope name -> the class of the module last called under it ("0" -> "Linear"), so a
# picture can label a scope "0: Linear"; read by the recorder when it stops.
_classes: dict[str, str] = {}


def current_scope() -> str | None:
    return _stack[-1] if _stack else None


def push(name: str, class_name: str | None = None) -> None:
    _stack.append(name)
    if class_name is not None:
        _classes[name] = class_name


def class_of(name: str) -> str | None:
    """The class name of the module called under scope ``name``, if one was."""
    return _classes.get(name)


def pop() -> None:
    if _stack:
        _stack.pop()
