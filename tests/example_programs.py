"""The programs in examples/: where they are, and loading one as a module, with tracegrad
or -- the one line they change swapped back -- with torch."""

from __future__ import annotations

import re
import types
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
ALL_EXAMPLES = sorted(path.name for path in EXAMPLES.glob("*.py"))


def load_example(name: str, real_torch: bool = False) -> types.ModuleType:
    """The example's module; with ``real_torch`` its source runs with torch in place of
    tracegrad (the one line the examples change)."""
    path = EXAMPLES / f"{name}.py"
    source = path.read_text()
    if real_torch:
        pytest.importorskip("torch")
        for ours, theirs in (("import tracegrad.nn as nn", "import torch.nn as nn"),
                             ("import tracegrad as torch", "import torch"),
                             ("from tracegrad.autograd", "from torch.autograd")):
            source = source.replace(ours, theirs)
        leftover = re.search(r"^\s*(import|from)\s+tracegrad\b.*$", source, re.MULTILINE)
        assert leftover is None, f"examples/{name}.py: cannot swap {leftover.group(0)!r}"
    module = types.ModuleType(f"examples_{name}_{'torch' if real_torch else 'tracegrad'}")
    module.__file__ = str(path)
    exec(compile(source, str(path), "exec"), module.__dict__)  # noqa: S102 - our own files
    return module
