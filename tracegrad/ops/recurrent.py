"""One LSTM layer over a whole sequence as one node: what torch records on the CPU for a
float32 ``nn.LSTM`` (MkldnnRnnLayerBackward0; float64 runs the cell composite instead,
as torch's does).

Forward projects every time step's input with one matrix product, then steps through time
with one ``h @ W_hh.T`` per step; backward through time mirrors it and forms the weights'
gradients with one product each at the end. With ``create_graph`` the backward instead
runs the cell composite again and differentiates it (the same numbers, as a graph).
"""

from __future__ import annotations

from ..autograd.function import Op
from ..autograd.grad_mode import state
from ..autograd.quiet import silenced
from ..backends import array_module
from ..errors import ShapeError
from ..tensor import Tensor


def _sigmoid(xp, array, out=None):
    # sigmoid(x) = (tanh(x / 2) + 1) / 2: one transcendental, and no overflow for large |x|
    out = xp.multiply(array, 0.5, out=out)
    xp.tanh(out, out=out)
    out += 1
    out *= 0.5
    return out


class MkldnnRnnLayer(Op):
    """``(output, h_n, c_n)`` of one LSTM layer (one direction) over ``input`` (T, B, I)
    from the state ``(hx, cx)``; ``reverse`` runs it from the last step to the first."""

    node_name = "MkldnnRnnLayerBackward0"
    array_backward = True

    @staticmethod
    @silenced
    def forward(ctx, input, weight_ih, weight_hh, bias_ih, bias_hh, hx, cx, reverse=False):
        xp = input._xp
        x, w_ih, w_hh = input._array, weight_ih._array, weight_hh._array
        steps, batch = x.shape[:2]
        hidden = w_hh.shape[1]
        if x.shape[2] != w_ih.shape[1]:
            raise ShapeError(
                f"input.size(-1) must be equal to input_size. Expected {w_ih.shape[1]}, got "
                f"{x.shape[2]} ({input._describe()})")
        projected = (x.reshape(steps * batch, -1) @ w_ih.T).reshape(steps, batch, 4 * hidden)
        if bias_ih is not None:
            projected += bias_ih._array + bias_hh._array
        activations = xp.empty_like(projected)
        cells = xp.empty((steps, batch, hidden), dtype=x.dtype)
        tanh_cells = xp.empty_like(cells)
        outputs = xp.empty_like(cells)
        h, c = hx._array, cx._array
        w_hh_t = w_hh.T
        for step in (range(steps - 1, -1, -1) if reverse else range(steps)):
            gates = projected[step]
            gates += h @ w_hh_t
            act = activations[step]
            _sigmoid(xp, gates, out=act)
            xp.tanh(gates[:, 2 * hidden:3 * hidden], out=act[:, 2 * hidden:3 * hidden])
            c = act[:, hidden:2 * hidden] * c
            c += act[:, :hidden] * act[:, 2 * hidden:3 * hidden]
            cells[step] = c
            xp.tanh(c, out=tanh_cells[step])
            h = outputs[step]
            xp.multiply(act[:, 3 * hidden:], tanh_cells[step], out=h)
        ctx.save_for_backward(input, weight_ih, weight_hh, bias_ih, bias_hh, hx, cx)
        ctx.saved_arrays = (activations, cells, tanh_cells, outputs)
        ctx.reverse = reverse
        return outputs, h.copy(), c.copy()

    @staticmethod
    def backward(ctx, grad_output, grad_hy, grad_cy):
        saved = ctx.saved_tensors
        if grad_output.__class__ is not Tensor:  # a pass without create_graph: arrays
            return _backward_arrays(ctx, saved, grad_output, grad_hy, grad_cy) + (None,)
        if state.grad_enabled:
            return _backward_through_cells(ctx, saved, (grad_output, grad_hy, grad_cy))
        # the node called directly, outside a pass: the array math, wrapped
        arrays = _backward_arrays(ctx, tuple(None if tensor is None else tensor._array
                                             for tensor in saved),
                                  grad_output._array, grad_hy._array, grad_cy._array)
        return tuple(None if array is None else Tensor._wrap(array, False)
                     for array in arrays) + (None,)


def _backward_arrays(ctx, saved, grad_output, grad_hy, grad_cy) -> tuple:
    """The layer's gradients as arrays, from the saved values' and the gradients' arrays."""
    x, w_ih, w_hh, bias_ih, _, hx, cx = saved
    activations, cells, tanh_cells, outputs = ctx.saved_arrays
    needs = ctx.needs_input_grad
    xp = array_module(x)
    steps, batch = x.shape[:2]
    hidden = w_hh.shape[1]
    reverse = ctx.reverse
    order = range(steps) if reverse else range(steps - 1, -1, -1)  # backward in time
    grad_gates = xp.empty_like(activations)
    dh = grad_hy.copy()
    dc = grad_cy.copy()
    g_out = grad_output
    for step in order:
        previous = step + 1 if reverse else step - 1
        c_previous = cx if previous in (-1, steps) else cells[previous]
        act = activations[step]
        i, f = act[:, :hidden], act[:, hidden:2 * hidden]
        g, o = act[:, 2 * hidden:3 * hidden], act[:, 3 * hidden:]
        tc = tanh_cells[step]
        dh += g_out[step]
        dc += dh * o * (1 - tc * tc)
        d = grad_gates[step]
        xp.multiply(dc * g, i * (1 - i), out=d[:, :hidden])
        xp.multiply(dc * c_previous, f * (1 - f), out=d[:, hidden:2 * hidden])
        xp.multiply(dc * i, 1 - g * g, out=d[:, 2 * hidden:3 * hidden])
        xp.multiply(dh * tc, o * (1 - o), out=d[:, 3 * hidden:])
        dc *= f
        dh = d @ w_hh
    flat = grad_gates.reshape(steps * batch, 4 * hidden)
    grads = [None] * 7
    if needs[0]:
        grads[0] = (flat @ w_ih).reshape(x.shape)
    if needs[1]:
        grads[1] = flat.T @ x.reshape(steps * batch, -1)
    if needs[2]:
        if reverse:
            before = xp.concatenate((outputs[1:], hx[None]))
        else:
            before = xp.concatenate((hx[None], outputs[:-1]))
        grads[2] = flat.T @ before.reshape(steps * batch, hidden)
    if bias_ih is not None and (needs[3] or needs[4]):
        summed = flat.sum(axis=0)
        grads[3] = summed if needs[3] else None
        grads[4] = summed.copy() if needs[4] else None
    if needs[5]:
        grads[5] = dh
    if needs[6]:
        grads[6] = dc
    return tuple(grads)


def _backward_through_cells(ctx, saved, grads) -> tuple:
    """create_graph: the layer again as LSTM cells (tensor ops), differentiated."""
    from ..autograd.engine import grad as autograd_grad
    from ..nn._cells import lstm_sequence

    input, weight_ih, weight_hh, bias_ih, bias_hh, hx, cx = saved
    outputs = lstm_sequence(input, (hx, cx), weight_ih, weight_hh, bias_ih, bias_hh,
                            ctx.reverse)
    wanted = [tensor for tensor, needed in zip(saved, ctx.needs_input_grad)
              if needed and tensor is not None]
    found = iter(autograd_grad(outputs, wanted, grads, create_graph=True, allow_unused=True))
    return tuple(next(found) if needed and tensor is not None else None
                 for tensor, needed in zip(saved, ctx.needs_input_grad)) + (None,)
