"""tracegrad.testing: state an autograd graph in a test, and get a diff when it differs.

>>> from tracegrad.testing import assert_graph, graph_text
>>> import tracegrad as torch
>>> x = torch.ones(8, requires_grad=True); x.name = "x"
>>> assert_graph(x.exp().sum(), '''
...     SumBackward0
...       ExpBackward0  saves: t1 f32[8]
...         AccumulateGrad  x f32[8]
... ''')

The assertions load on first use: the pytest plugin (``tracegrad.testing.plugin``) imports
this package at pytest start-up and registers ``tracegrad.testing.assertions`` for assertion
rewriting, which only works if that module is not imported yet. ``graph_text`` and
``gradcheck`` are imported here because each shares its name with its module: bound now,
the function wins over the submodule for ``from tracegrad.testing import graph_text``.
"""

from __future__ import annotations

import importlib
from typing import Any

from .gradcheck import NodeGradcheckError, gradcheck
from .graph_text import graph_text, normalize_text, short_type

_EXPORTS = {
    "assert_graph": "assertions",
    "assert_op_counts": "assertions",
    "assert_contains_chain": "assertions",
    "assert_no_path": "assertions",
    "assert_saved": "assertions",
    "assert_no_violations": "assertions",
    "assert_no_nan": "assertions",
    "graph_diff": "assertions",
    "assert_has_grad": "answers",
    "diff_traces": "answers",
    "assert_close": "comparison",  # torch.testing's
    "make_tensor": "comparison",
}

__all__ = [  # noqa: RUF022 - grouped by module, as _EXPORTS
    "graph_text",
    "normalize_text",
    "short_type",
    "assert_graph",
    "assert_op_counts",
    "assert_contains_chain",
    "assert_no_path",
    "assert_saved",
    "assert_no_violations",
    "assert_no_nan",
    "graph_diff",
    "assert_has_grad",
    "diff_traces",
    "gradcheck",
    "NodeGradcheckError",
    "assert_close",
    "make_tensor",
]


def __getattr__(name: str) -> Any:
    module_name = _EXPORTS.get(name)
    if module_name is None:
        from .._unsupported import missing_attribute

        raise missing_attribute("torch.testing", name, "module 'tracegrad.testing'")
    value = getattr(importlib.import_module(f".{module_name}", __name__), name)
    globals()[name] = value  # later lookups skip __getattr__
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
