"""The recurrent cells as compositions of tensor ops, written in torch's order so the graph
and the float64 numbers are torch's: ``nn.RNNCell``/``LSTMCell``/``GRUCell``, and every
layer of ``nn.RNN``/``GRU`` (and of a float64 ``nn.LSTM``), which run a cell per step on
the input projected for the whole sequence at once, as torch's CPU kernels do.
"""

from __future__ import annotations

from ..ops.shape import Stack
from ..tensor import Tensor
from ._ops import linear


def lstm_step(projected: Tensor, hx: Tensor, cx: Tensor, weight_hh: Tensor,
              bias_hh: Tensor | None) -> tuple[Tensor, Tensor]:
    """One LSTM step from the input's projection ``x @ W_ih.T + b_ih``."""
    gates = projected + linear(hx, weight_hh, bias_hh)
    ingate, forgetgate, cellgate, outgate = gates.chunk(4, 1)
    ingate, forgetgate = ingate.sigmoid(), forgetgate.sigmoid()
    cellgate, outgate = cellgate.tanh(), outgate.sigmoid()
    cy = forgetgate * cx + ingate * cellgate
    hy = outgate * cy.tanh()
    return hy, cy


def gru_step(projected: Tensor, hx: Tensor, weight_hh: Tensor,
             bias_hh: Tensor | None) -> Tensor:
    input_reset, input_update, input_new = projected.chunk(3, 1)
    hidden_reset, hidden_update, hidden_new = linear(hx, weight_hh, bias_hh).chunk(3, 1)
    reset_gate = (hidden_reset + input_reset).sigmoid()
    input_gate = (hidden_update + input_update).sigmoid()
    new_gate = (input_new + hidden_new * reset_gate).tanh()
    return (hx - new_gate) * input_gate + new_gate


def rnn_step(projected: Tensor, hx: Tensor, weight_hh: Tensor, bias_hh: Tensor | None,
             nonlinearity: str) -> Tensor:
    total = projected + linear(hx, weight_hh, bias_hh)
    return total.tanh() if nonlinearity == "tanh" else total.relu()


def run_layer(mode: str, input: Tensor, state, weight_ih, weight_hh, bias_ih, bias_hh,
              reverse: bool):
    """One layer, one direction, over ``input`` (T, B, I): (outputs (T, B, H), state).

    ``state`` is ``(h, c)`` for "LSTM" and ``h`` otherwise; ``mode`` is "LSTM", "GRU",
    "RNN_TANH" or "RNN_RELU".
    """
    projected = linear(input, weight_ih, bias_ih)
    steps = input.shape[0]
    outputs: list = [None] * steps
    for step in (range(steps - 1, -1, -1) if reverse else range(steps)):
        if mode == "LSTM":
            state = lstm_step(projected[step], state[0], state[1], weight_hh, bias_hh)
            outputs[step] = state[0]
        elif mode == "GRU":
            state = outputs[step] = gru_step(projected[step], state, weight_hh, bias_hh)
        else:
            nonlinearity = "tanh" if mode == "RNN_TANH" else "relu"
            state = outputs[step] = rnn_step(projected[step], state, weight_hh, bias_hh,
                                             nonlinearity)
    return Stack.apply(*outputs, dim=0), state


def lstm_sequence(input, state, weight_ih, weight_hh, bias_ih, bias_hh, reverse: bool):
    """``(output, h_n, c_n)`` of one LSTM layer: the composite of MkldnnRnnLayer."""
    output, (hy, cy) = run_layer("LSTM", input, state, weight_ih, weight_hh, bias_ih,
                                 bias_hh, reverse)
    return output, hy, cy
