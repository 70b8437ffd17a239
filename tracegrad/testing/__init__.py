"""tracegrad.testing: state an autograd graph in a test, and get a diff when it differs.

>>> from tracegrad.testing import assert_graph, graph_text
>>> import tracegrad as torch
>>> x = torch.ones(8, requires_grad=True); x.name = "x"
>>> assert_graph(x.exp().sum(), '''
...     SumBackward0
...       ExpBackward0  saves: t1 f32[8]
...         AccumulateGrad  x f32[8]
... ''')

The names below load on first use: the pytest plugin (``tracegrad.testing.plugin``) imports
this package at pytest start-up, and registers ``tracegrad.testing.assertions`` for
assertion rewriting, which only works if that module is not imported yet.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "graph_text": "graph_text",
    "normalize_text": "graph_text",
    "short_type": "graph_text",
    "assert_graph": "assertions",
    "assert_op_counts": "assertions",
    "assert_contains_chain": "assertions",
    "assert_no_path": "assertions",
    "assert_saved": "assertions",
    "assert_no_violations": "assertions",
    "assert_no_nan": "assertions",
    "graph_diff": "assertions",
    "gradcheck": "gradcheck",
    "NodeGradcheckError": "gradcheck",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module_name = _EXPORTS.get(name)
    if module_name is None:
        raise AttributeError(f"module 'tracegrad.testing' has no attribute '{name}'")
    value = getattr(importlib.import_module(f".{module_name}", __name__), name)
    globals()[name] = value  # later lookups skip __getattr__
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
