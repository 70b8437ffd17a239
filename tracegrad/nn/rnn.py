"""Recurrent layers: RNN, LSTM, GRU (multi-layer, bidirectional, batch_first, dropout
between layers, initial states) and the single-step RNNCell, LSTMCell, GRUCell.

A float32 LSTM layer runs as one MkldnnRnnLayerBackward0 node per layer and direction (as
torch records it on the CPU); the other layers run the cell composite of ``_cells.py``.

>>> import tracegrad as torch
>>> lstm = torch.nn.LSTM(3, 5, num_layers=2, batch_first=True)
>>> output, (h, c) = lstm(torch.randn(4, 7, 3))
>>> output.shape, h.shape
(tracegrad.Size([4, 7, 5]), tracegrad.Size([2, 4, 5]))
"""

from __future__ import annotations

import math
import numbers
import warnings

from .. import factories
from ..ops.recurrent import MkldnnRnnLayer
from ..ops.shape import Cat, Stack, TransposeInPlace, in_place
from ..tensor import Tensor
from . import _cells, init
from . import _functional_norm as F
from ._ops import linear
from .module import Module
from .parameter import Parameter

_GATES = {"LSTM": 4, "GRU": 3, "RNN_TANH": 1, "RNN_RELU": 1}


class RNNBase(Module):
    def __init__(self, mode: str, input_size: int, hidden_size: int, num_layers: int = 1,
                 bias: bool = True, batch_first: bool = False, dropout: float = 0.0,
                 bidirectional: bool = False, proj_size: int = 0, device=None,
                 dtype=None) -> None:
        super().__init__()
        if (not isinstance(dropout, numbers.Number) or isinstance(dropout, bool)
                or not 0 <= dropout <= 1):
            raise ValueError("dropout should be a number in range [0, 1] representing the "
                             "probability of an element being zeroed")
        if dropout > 0 and num_layers == 1:
            warnings.warn(
                "dropout option adds dropout after all but last recurrent layer, so non-zero "
                f"dropout expects num_layers greater than 1, but got dropout={dropout} and "
                f"num_layers={num_layers}", stacklevel=2)
        if not isinstance(hidden_size, int) or hidden_size <= 0:
            raise ValueError("hidden_size must be greater than zero")
        if not isinstance(num_layers, int) or num_layers <= 0:
            raise ValueError("num_layers must be greater than zero")
        if proj_size:
            raise NotImplementedError("tracegrad does not implement LSTM(proj_size=...)")
        self.mode, self.input_size, self.hidden_size = mode, input_size, hidden_size
        self.num_layers, self.bias, self.batch_first = num_layers, bias, batch_first
        self.dropout, self.bidirectional, self.proj_size = float(dropout), bidirectional, 0
        directions = 2 if bidirectional else 1
        gate_size = _GATES[mode] * hidden_size
        self._flat_weights_names: list[str] = []
        for layer in range(num_layers):
            for direction in range(directions):
                layer_input = input_size if layer == 0 else hidden_size * directions
                suffix = f"_l{layer}" + ("_reverse" if direction == 1 else "")
                shapes = [("weight_ih", (gate_size, layer_input)),
                          ("weight_hh", (gate_size, hidden_size))]
                if bias:
                    shapes += [("bias_ih", (gate_size,)), ("bias_hh", (gate_size,))]
                for name, shape in shapes:
                    self.register_parameter(name + suffix, Parameter(
                        factories.empty(*shape, dtype=dtype, device=device)))
                    self._flat_weights_names.append(name + suffix)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        bound = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        for weight in self.parameters():
            init.uniform_(weight, -bound, bound)

    def flatten_parameters(self) -> None:
        """Accepted for compatibility: tracegrad's weights are never packed."""

    @property
    def all_weights(self) -> list:
        return [[getattr(self, name) for name in self._flat_weights_names[start:start + 4]]
                for start in range(0, len(self._flat_weights_names),
                                   4 if self.bias else 2)]

    def _layer_weights(self, layer: int, direction: int) -> tuple:
        suffix = f"_l{layer}" + ("_reverse" if direction == 1 else "")
        weight_ih = getattr(self, "weight_ih" + suffix)
        weight_hh = getattr(self, "weight_hh" + suffix)
        if not self.bias:
            return weight_ih, weight_hh, None, None
        return weight_ih, weight_hh, getattr(self, "bias_ih" + suffix), \
            getattr(self, "bias_hh" + suffix)

    def extra_repr(self) -> str:
        text = f"{self.input_size}, {self.hidden_size}"
        if self.num_layers != 1:
            text += f", num_layers={self.num_layers}"
        if self.bias is not True:
            text += f", bias={self.bias}"
        if self.batch_first is not False:
            text += f", batch_first={self.batch_first}"
        if self.dropout != 0:
            text += f", dropout={self.dropout}"
        if self.bidirectional is not False:
            text += f", bidirectional={self.bidirectional}"
        return text

    # -- running -----------------------------------------------------------------------
    def _prepare(self, input: Tensor) -> tuple[Tensor, bool]:
        """The input as (T, B, I), and whether it had a batch dim."""
        if input.ndim not in (2, 3):
            raise ValueError(f"{type(self).__name__}: Expected input to be 2D or 3D, got "
                             f"{input.ndim}D instead")
        batched = input.ndim == 3
        if not batched:
            input = input.unsqueeze(0 if self.batch_first else 1)
        if self.batch_first:
            input = input.transpose(0, 1)
        if input.shape[-1] != self.input_size:
            raise RuntimeError(f"input.size(-1) must be equal to input_size. Expected "
                               f"{self.input_size}, got {input.shape[-1]}")
        return input, batched

    def _initial_state(self, input: Tensor, hx: Tensor | None, batched: bool,
                       index: int | None = None) -> Tensor:
        directions = 2 if self.bidirectional else 1
        expected = (self.num_layers * directions, input.shape[1], self.hidden_size)
        if hx is None:
            return factories.zeros(*expected, dtype=input.dtype, device=input.device)
        if not batched:
            if hx.ndim != 2:
                raise RuntimeError(f"For unbatched 2-D input, hx should also be 2-D but got "
                                   f"{hx.ndim}-D tensor")
            hx = hx.unsqueeze(1)
        elif hx.ndim != 3:
            raise RuntimeError(f"For batched 3-D input, hx should also be 3-D but got "
                               f"{hx.ndim}-D tensor")
        if tuple(hx.shape) != expected:
            label = "hidden" if index is None else f"hidden[{index}]"
            raise RuntimeError(f"Expected {label} size {expected}, got {list(hx.shape)}")
        return hx

    def _run(self, input: Tensor, states: tuple) -> tuple:
        """Every layer and direction; ``states`` holds (h0,) or (h0, c0), each (L*D, B, H).
        Returns the last layer's output (T, B, D*H) and the final states, stacked."""
        directions = 2 if self.bidirectional else 1
        finals: list[list] = [[] for _ in states]
        layer_input = input
        if self.mode == "LSTM" and not input.is_contiguous() and \
                _fused(input, self._layer_weights(0, 0)):
            layer_input = input.contiguous()  # (torch's oneDNN path: CloneBackward0 first)
        for layer in range(self.num_layers):
            outputs = []
            for direction in range(directions):
                index = layer * directions + direction
                start = tuple(state[index] for state in states)
                output, final = self._layer(layer_input, start, layer, direction)
                outputs.append(output)
                for collected, value in zip(finals, final):
                    collected.append(value)
            layer_input = outputs[0] if directions == 1 else Cat.apply(*outputs, dim=2)
            if self.dropout and self.training and layer < self.num_layers - 1:
                layer_input = F.dropout(layer_input, self.dropout, True)
        return layer_input, tuple(Stack.apply(*collected, dim=0) for collected in finals)

    def _layer(self, input: Tensor, start: tuple, layer: int, direction: int):
        weights = self._layer_weights(layer, direction)
        reverse = direction == 1
        if self.mode == "LSTM" and _fused(input, weights):
            output, hy, cy = MkldnnRnnLayer.apply(input, *weights, start[0], start[1],
                                                  reverse=reverse)
            return output, (hy, cy)
        state = start if self.mode == "LSTM" else start[0]
        output, final = _cells.run_layer(self.mode, input, state, *weights, reverse)
        return output, (final if self.mode == "LSTM" else (final,))

    def _finish(self, output: Tensor, states: tuple, batched: bool):
        if self.batch_first:
            # torch's RNN and GRU kernels transpose their output in place (transpose_:
            # TransposeBackward1, one version more); the LSTM module transposes a view
            output = output.transpose(0, 1) if self.mode == "LSTM" else \
                in_place(TransposeInPlace, output, 0, 1)
        if not batched:
            output = output.squeeze(0 if self.batch_first else 1)
            states = tuple(state.squeeze(1) for state in states)
        return output, states


def _fused(input: Tensor, weights: tuple) -> bool:
    """float32 throughout: the one-node layer torch's CPU kernel records (float64 runs the
    cell composite, in torch as here)."""
    return input._array.dtype.name == "float32" and all(
        w is None or w._array.dtype.name == "float32" for w in weights)


class RNN(RNNBase):
    """Elman RNN: ``h = tanh(x @ W_ih.T + b_ih + h @ W_hh.T + b_hh)`` (or relu)."""

    def __init__(self, *args, **kwargs) -> None:
        nonlinearity = kwargs.pop("nonlinearity", "tanh")
        if len(args) > 3:  # positional: input_size, hidden_size, num_layers, nonlinearity
            nonlinearity = args[3]
            args = args[:3] + args[4:]
        if nonlinearity == "tanh":
            mode = "RNN_TANH"
        elif nonlinearity == "relu":
            mode = "RNN_RELU"
        else:
            raise ValueError(f"Unknown nonlinearity '{nonlinearity}'. Select from 'tanh' or "
                             "'relu'.")
        self_nonlinearity = nonlinearity
        super().__init__(mode, *args, **kwargs)
        self.nonlinearity = self_nonlinearity

    def forward(self, input: Tensor, hx: Tensor | None = None):
        input, batched = self._prepare(input)
        h0 = self._initial_state(input, hx, batched)
        output, (h_n,) = self._run(input, (h0,))
        output, (h_n,) = self._finish(output, (h_n,), batched)
        return output, h_n


class GRU(RNNBase):
    def __init__(self, *args, **kwargs) -> None:
        super().__init__("GRU", *args, **kwargs)

    def forward(self, input: Tensor, hx: Tensor | None = None):
        input, batched = self._prepare(input)
        h0 = self._initial_state(input, hx, batched)
        output, (h_n,) = self._run(input, (h0,))
        output, (h_n,) = self._finish(output, (h_n,), batched)
        return output, h_n


class LSTM(RNNBase):
    """Long short-term memory; ``forward(input, (h0, c0))`` returns
    ``output, (h_n, c_n)``."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__("LSTM", *args, **kwargs)

    def forward(self, input: Tensor, hx: tuple | None = None):
        input, batched = self._prepare(input)
        if hx is None:
            h0 = self._initial_state(input, None, batched)
            c0 = self._initial_state(input, None, batched)
        else:
            if not isinstance(hx, (tuple, list)) or len(hx) != 2:
                raise TypeError("LSTM expects hx as a tuple (h_0, c_0)")
            h0 = self._initial_state(input, hx[0], batched, 0)
            c0 = self._initial_state(input, hx[1], batched, 1)
        output, (h_n, c_n) = self._run(input, (h0, c0))
        output, (h_n, c_n) = self._finish(output, (h_n, c_n), batched)
        return output, (h_n, c_n)


class RNNCellBase(Module):
    def __init__(self, input_size: int, hidden_size: int, bias: bool, num_chunks: int,
                 device=None, dtype=None) -> None:
        super().__init__()
        self.input_size, self.hidden_size, self.bias = input_size, hidden_size, bias
        self.weight_ih = Parameter(factories.empty(num_chunks * hidden_size, input_size,
                                                   dtype=dtype, device=device))
        self.weight_hh = Parameter(factories.empty(num_chunks * hidden_size, hidden_size,
                                                   dtype=dtype, device=device))
        if bias:
            self.bias_ih = Parameter(factories.empty(num_chunks * hidden_size, dtype=dtype,
                                                     device=device))
            self.bias_hh = Parameter(factories.empty(num_chunks * hidden_size, dtype=dtype,
                                                     device=device))
        else:
            self.register_parameter("bias_ih", None)
            self.register_parameter("bias_hh", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        bound = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        for weight in self.parameters():
            init.uniform_(weight, -bound, bound)

    def extra_repr(self) -> str:
        text = f"{self.input_size}, {self.hidden_size}"
        if self.bias is not True:
            text += f", bias={self.bias}"
        if getattr(self, "nonlinearity", "tanh") != "tanh":
            text += f", nonlinearity={self.nonlinearity}"
        return text

    def _batched(self, input: Tensor, hx, name: str):
        if input.ndim not in (1, 2):
            raise ValueError(f"{name}: Expected input to be 1D or 2D, got {input.ndim}D "
                             "instead")
        batched = input.ndim == 2
        if not batched:
            input = input.unsqueeze(0)
        if hx is None:
            return input, None, batched
        hx = tuple(h if batched else h.unsqueeze(0) for h in hx)
        for h in hx:
            if h.ndim != 2 or h.shape[0] != input.shape[0] or h.shape[1] != self.hidden_size:
                raise RuntimeError(
                    f"{name}: Expected hidden size ({input.shape[0]}, {self.hidden_size}), "
                    f"got {list(h.shape)}")
        return input, hx, batched

    def _zeros(self, input: Tensor) -> Tensor:
        return factories.zeros(input.shape[0], self.hidden_size, dtype=input.dtype,
                               device=input.device)


class RNNCell(RNNCellBase):
    def __init__(self, input_size: int, hidden_size: int, bias: bool = True,
                 nonlinearity: str = "tanh", device=None, dtype=None) -> None:
        super().__init__(input_size, hidden_size, bias, 1, device, dtype)
        self.nonlinearity = nonlinearity

    def forward(self, input: Tensor, hx: Tensor | None = None) -> Tensor:
        if self.nonlinearity not in ("tanh", "relu"):
            raise RuntimeError(f"Unknown nonlinearity: {self.nonlinearity}")
        input, hidden, batched = self._batched(input, None if hx is None else (hx,),
                                               "RNNCell")
        h = self._zeros(input) if hidden is None else hidden[0]
        out = _cells.rnn_step(linear(input, self.weight_ih, self.bias_ih), h, self.weight_hh,
                              self.bias_hh, self.nonlinearity)
        return out if batched else out.squeeze(0)


class LSTMCell(RNNCellBase):
    def __init__(self, input_size: int, hidden_size: int, bias: bool = True, device=None,
                 dtype=None) -> None:
        super().__init__(input_size, hidden_size, bias, 4, device, dtype)

    def forward(self, input: Tensor, hx: tuple | None = None) -> tuple[Tensor, Tensor]:
        input, hidden, batched = self._batched(input, hx, "LSTMCell")
        if hidden is None:
            hidden = (self._zeros(input), self._zeros(input))
        hy, cy = _cells.lstm_step(linear(input, self.weight_ih, self.bias_ih), hidden[0],
                                  hidden[1], self.weight_hh, self.bias_hh)
        return (hy, cy) if batched else (hy.squeeze(0), cy.squeeze(0))


class GRUCell(RNNCellBase):
    def __init__(self, input_size: int, hidden_size: int, bias: bool = True, device=None,
                 dtype=None) -> None:
        super().__init__(input_size, hidden_size, bias, 3, device, dtype)

    def forward(self, input: Tensor, hx: Tensor | None = None) -> Tensor:
        input, hidden, batched = self._batched(input, None if hx is None else (hx,),
                                               "GRUCell")
        h = self._zeros(input) if hidden is None else hidden[0]
        out = _cells.gru_step(linear(input, self.weight_ih, self.bias_ih), h, self.weight_hh,
                              self.bias_hh)
        return out if batched else out.squeeze(0)
