"""Random compositions of ops on random shapes, every input gradient against finite
differences (float64).

A program is a list of steps drawn by hypothesis: unary math, binary ops against a new leaf
whose shape broadcasts, reductions with dim/keepdim, reshapes/transposes, indexing and
softmax. Each step knows the current shape by running on a probe tensor while drawing, so
every drawn step is valid. derandomize=True keeps CI deterministic.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from hypothesis import HealthCheck, given, note, settings
from hypothesis import strategies as st

import tracegrad as tg

Step = tuple[str, Callable]  # (description, fn(current, leaves) -> tensor)

UNARY = {
    "exp": lambda x: (x * 0.5).exp(),
    "tanh": lambda x: x.tanh(),
    "sigmoid": lambda x: x.sigmoid(),
    "sin": lambda x: x.sin(),
    "square": lambda x: x * x,
    "cube": lambda x: x ** 3,
    "log": lambda x: (x * x + 1).log(),
    "sqrt": lambda x: (x * x + 1).sqrt(),
    "relu+x": lambda x: x.relu() + x,  # no flat region: never ties inside a later max
    "abs": lambda x: x.abs(),
    "neg": lambda x: -x,
    "clamp": lambda x: x.clamp(-1.5, 1.5),
}

BINARY = {
    "add": lambda x, y: x + y,
    "sub": lambda x, y: y - x,
    "mul": lambda x, y: x * y,
    "div": lambda x, y: x / (y * y + 1),
    "maximum": lambda x, y: tg.maximum(x, y),
    "where": lambda x, y: tg.where(x > y, x, y * 2),
}


def _broadcast_partner(draw, shape: tuple) -> tuple:
    """A shape that broadcasts against ``shape`` (a suffix, some sizes set to 1, or one
    extra leading dimension)."""
    if len(shape) < 3 and draw(st.booleans()):
        return (draw(st.integers(1, 3)),) + shape
    keep = draw(st.integers(0, len(shape)))
    suffix = shape[len(shape) - keep:]
    return tuple(1 if draw(st.booleans()) else size for size in suffix)


def _draw_step(draw, probe, leaf_count: int, rng) -> tuple[Step, np.ndarray | None]:
    """One valid step for a tensor shaped like ``probe``; maybe a new leaf's value."""
    shape, ndim = tuple(probe.shape), probe.ndim
    # One flat menu, so each op is about as likely as any other (drawing a family first
    # would make a family with one member, like cat, as common as all unary ops together).
    menu = [f"unary:{name}" for name in sorted(UNARY)]
    menu += [f"binary:{name}" for name in sorted(BINARY)]
    if ndim:
        menu += ["cat:", "softmax:softmax", "softmax:log_softmax"]
        menu += [f"reduce:{name}" for name in ("sum", "mean", "max", "min", "sum_all", "var")]
        menu += [f"shape:{name}" for name in ("flatten", "transpose", "permute", "unsqueeze",
                                              "expand", "view")]
        menu += [f"index:{name}" for name in ("int", "slice", "array", "mask", "setitem")]
    # The seeded rng picks the op: hypothesis' own choice leans hard on the first entries.
    kind, choice = menu[int(rng.integers(len(menu)))].split(":")
    if kind == "unary":
        name = choice
        return (name, lambda x, leaves: UNARY[name](x)), None
    if kind == "binary":
        name = choice
        other = _broadcast_partner(draw, shape)
        index = leaf_count
        step = (f"{name} with leaf {index} {list(other)}",
                lambda x, leaves: BINARY[name](x, leaves[index]))
        return step, rng.uniform(-2, 2, size=other)
    if kind == "cat":
        dim = draw(st.integers(-ndim, ndim - 1))
        return (f"cat([x, x * 2], {dim})", lambda x, leaves: tg.cat([x, x * 2], dim)), None
    dim = draw(st.integers(-ndim, ndim - 1))
    if kind == "reduce":
        name = choice
        keepdim = draw(st.booleans())
        if name == "sum_all":
            return ("sum()", lambda x, leaves: x.sum()), None
        if name in ("max", "min") and shape[dim] == 0:
            name = "sum"  # max over an empty dimension is an error, in torch as here
        if name in ("max", "min"):
            return (f"{name}({dim}, keepdim={keepdim}).values",
                    lambda x, leaves: getattr(x, name)(dim, keepdim=keepdim)[0]), None
        if name == "var" and shape[dim] < 2:
            name = "sum"
        return (f"{name}({dim}, keepdim={keepdim})",
                lambda x, leaves: getattr(x, name)(dim, keepdim=keepdim)), None
    if kind == "softmax":
        name = choice
        return (f"{name}({dim})", lambda x, leaves: getattr(x, name)(dim)), None
    if kind == "shape":
        name = choice
        if name == "transpose":
            other = draw(st.integers(0, ndim - 1))
            return (f"transpose({dim}, {other})", lambda x, leaves: x.transpose(dim, other)), None
        if name == "permute":
            order = draw(st.permutations(range(ndim)))
            return (f"permute{tuple(order)}", lambda x, leaves: x.permute(*order)), None
        if name == "unsqueeze" and ndim < 4:
            return (f"unsqueeze({dim})", lambda x, leaves: x.unsqueeze(dim)), None
        if name == "expand" and ndim < 4:
            size = draw(st.integers(1, 3))
            return (f"unsqueeze(0).expand({size}, ...)",
                    lambda x, leaves: x.unsqueeze(0).expand(size, *x.shape)), None
        if name == "view":
            return ("contiguous().view(-1, last)",
                    lambda x, leaves: x.contiguous().view(-1, x.shape[-1])), None
        return ("flatten()", lambda x, leaves: x.flatten()), None
    # index
    size = shape[0]
    if size == 0:  # an earlier mask selected nothing: no element to index
        return ("flatten()", lambda x, leaves: x.flatten()), None
    name = choice
    if name == "int":
        position = draw(st.integers(-size, size - 1))
        return (f"x[{position}]", lambda x, leaves: x[position]), None
    if name == "slice":
        start = draw(st.integers(0, size - 1))
        step = draw(st.integers(1, 2))
        return (f"x[..., {start}::{step}]" if ndim > 1 else f"x[{start}::{step}]",
                lambda x, leaves: x[..., start::step] if x.ndim > 1 else x[start::step]), None
    if name == "array":
        picks = draw(st.lists(st.integers(0, size - 1), min_size=1, max_size=4))
        return (f"x[{picks}]", lambda x, leaves: x[tg.tensor(picks)]), None
    if name == "mask":
        return ("x[x > 0.1]", lambda x, leaves: x[x > 0.1]), None
    index = leaf_count
    position = draw(st.integers(0, size - 1))
    step = (f"y = x * 1; y[{position}] = leaf {index}",
            lambda x, leaves: _setitem(x, position, leaves[index]))
    return step, rng.uniform(-2, 2, size=shape[1:])


def _setitem(x, position, value):
    y = x * 1
    y[position] = value
    return y


@st.composite
def programs(draw):
    shape = tuple(draw(st.lists(st.integers(1, 3), min_size=0, max_size=3)))
    rng = np.random.default_rng(draw(st.integers(0, 2 ** 32 - 1)))
    leaves = [rng.uniform(-2, 2, size=shape)]
    steps: list[Step] = []
    probe = tg.tensor(leaves[0])
    for _ in range(draw(st.integers(2, 6))):
        step, new_leaf = _draw_step(draw, probe, len(leaves), rng)
        if new_leaf is not None:
            leaves.append(new_leaf)
        steps.append(step)
        probe = step[1](probe, [tg.tensor(leaf) for leaf in leaves])
    return leaves, steps


def _run(steps, *leaves):
    x = leaves[0]
    for _, fn in steps:
        x = fn(x, leaves)
    return x


@settings(max_examples=100, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow])
@given(programs())
def test_random_compositions_match_finite_differences(program):
    leaves, steps = program
    note("leaf shapes: " + ", ".join(str(list(leaf.shape)) for leaf in leaves))
    note("program: " + " -> ".join(description for description, _ in steps))
    inputs = [tg.tensor(leaf, dtype=tg.float64, requires_grad=True) for leaf in leaves]
    assert tg.autograd.gradcheck(lambda *xs: _run(steps, *xs), inputs, eps=1e-6, atol=1e-5,
                                 rtol=1e-3)
