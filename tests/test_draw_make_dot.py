"""``tracegrad.make_dot``: torchviz's signature, structure and colours.

With torch and torchviz installed, the same program is drawn by torchviz on torch and by
tracegrad.make_dot on tracegrad, and the DOT texts are compared statement by statement
(node ids renamed in order of first appearance: torchviz's are ``id()`` values).
"""

from __future__ import annotations

import inspect
import re

import pytest
from tutorial_programs import my_relu_on

import tracegrad as tg


def canonical(source: str) -> str:
    """DOT text with node ids (torchviz's id() numbers, our n/t/s counters) renamed N0,
    N1, ... in order of first appearance."""
    names: dict[str, str] = {}

    def rename(match: re.Match) -> str:
        return names.setdefault(match.group(0), f"N{len(names)}")

    return re.sub(r"(?<![\w\"])(\d{6,}|[nts]\d+(?:_\d+)?)(?![\w\"])", rename, source)


def two_layer(lib):
    lib.manual_seed(0)
    w1 = lib.randn(3, 5, requires_grad=True)
    w2 = lib.randn(5, 2, requires_grad=True)
    out = my_relu_on(lib).apply(lib.randn(4, 3).mm(w1)).mm(w2).pow(2).sum()
    return out, {"w1": w1, "w2": w2}


def view_and_tuple(lib):
    w = lib.randn(2, 3, requires_grad=True)
    return ((w * 2).view(6), (w.exp() + 1).sum()), {"w": w}


def shared_leaf(lib):
    w = lib.randn(2, 3, requires_grad=True)
    return (w.t().relu() * w.t()).sum(dim=0).mean(), {"w": w}


@pytest.mark.torch
@pytest.mark.parametrize("program", [two_layer, view_and_tuple, shared_leaf])
def test_same_dot_statements_as_torchviz_on_torch(program):
    torch = pytest.importorskip("torch")
    torchviz = pytest.importorskip("torchviz")
    theirs = torchviz.make_dot(program(torch)[0], params=program(torch)[1])
    # Called on an expression, so no variable name is found: only params name tensors,
    # as in torchviz.
    ours = tg.make_dot(program(tg)[0], params=program(tg)[1])
    assert canonical(ours.source) == canonical(theirs.source)
    assert dict(ours.graph_attr) == dict(theirs.graph_attr)


@pytest.mark.torch
def test_signature_is_torchviz_s():
    torchviz = pytest.importorskip("torchviz")
    assert inspect.signature(tg.make_dot).parameters.keys() == \
        inspect.signature(torchviz.make_dot).parameters.keys()
    theirs = {name: parameter.default for name, parameter
              in inspect.signature(torchviz.make_dot).parameters.items()}
    ours = {name: parameter.default for name, parameter
            in inspect.signature(tg.make_dot).parameters.items()}
    assert ours == theirs


def test_returns_a_digraph_with_torchviz_colours():
    import graphviz

    out, params = two_layer(tg)
    dot = tg.make_dot(out, params=params)
    assert isinstance(dot, graphviz.Digraph)
    source = dot.source
    assert source.count("fillcolor=lightblue") == 2  # w1, w2
    assert source.count("fillcolor=darkolivegreen1") == 1  # the output
    assert source.count("fillcolor=orange") == 1  # MyReLU's saved input, always shown
    assert "[dir=none]" in source
    assert 'label="w1\n (3, 5)" fillcolor=lightblue' in source
    assert "label=MmBackward0" in source and "label=MyReLUBackward" in source


def test_show_saved_draws_what_built_in_nodes_saved():
    w = tg.randn(3, requires_grad=True)
    plain = tg.make_dot(w.exp().sum()).source
    saved = tg.make_dot(w.exp().sum(), show_saved=True).source
    assert "orange" not in plain
    assert saved.count("fillcolor=orange") == 1 and saved.count("dir=none") == 1


def test_params_names_win_over_the_names_tracegrad_found():
    weight = tg.randn(2, 2, requires_grad=True)
    loss = (weight * 3).sum()
    automatic = tg.make_dot(loss).source
    assert 'label="weight\n (2, 2)" fillcolor=lightblue' in automatic
    assert 'label="loss\n ()" fillcolor=darkolivegreen1' in automatic
    named = tg.make_dot(loss, params={"fc.weight": weight}).source
    assert 'label="fc.weight\n (2, 2)" fillcolor=lightblue' in named


def test_show_attrs_is_torchviz_s_table():
    x = tg.randn(3, requires_grad=True)
    label = next(line for line in tg.make_dot(x.pow(2), show_attrs=True).body
                 if "PowBackward0" in line)
    # name, a rule as wide as the table, then "key: value" rows, values right-aligned
    # and cut at max_attr_chars, keys sorted as dir() lists them.
    # the saved slot is torch's "self", as torchviz shows it for torch's PowBackward0
    assert "PowBackward0\n------------------------\nexponent:              2\n" \
           "self    : [saved tensor]" in label
    short = next(line for line in tg.make_dot(x.pow(2), show_attrs=True, max_attr_chars=5)
                 .body if "PowBackward0" in line)
    assert "self    : [s..." in short


def test_size_grows_with_the_graph_as_torchviz_resizes_it():
    x = tg.randn(2, requires_grad=True)
    y = x
    for _ in range(60):
        y = y * 1.5
    dot = tg.make_dot(y.sum())
    assert dot.graph_attr["size"] == f"{len(dot.body) * 0.15},{len(dot.body) * 0.15}"
    assert tg.make_dot(x.sum()).graph_attr["size"] == "12,12"


def test_bad_input_says_what_make_dot_takes():
    with pytest.raises(TypeError, match="expected a Tensor or a tuple of Tensors"):
        tg.make_dot([1, 2])
    x = tg.randn(2, requires_grad=True)
    with pytest.raises(TypeError, match="params must map names to Tensors"):
        tg.make_dot(x.sum(), params={"x": 3})
