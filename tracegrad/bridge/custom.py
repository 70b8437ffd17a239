"""Custom ``autograd.Function`` nodes of a torch program.

No torch call reports ``MyReLU.apply(x)``: torch's ``Function.apply`` runs the user's
forward directly. The ops inside that forward are torch calls, though, made with grad off:
the first of them finds, up the stack, the forward's frame (its ``ctx`` is the node) and
the line that called ``apply()`` (above torch's own ``Function.apply`` frame). The node is
reported when its output is first used -- by an op, an in-place change or a backward --
with the arguments its forward received, exactly as tracegrad's engine reports it after
``apply()``.
"""

from __future__ import annotations

import inspect
import sys
import weakref

import torch

from ..autograd import events
from ..autograd.site import _is_internal, user_site
from ..tracing.names import names_in_frame

_APPLY_CODE = torch.autograd.function.Function.apply.__func__.__code__
# Frames between a torch call and the Function.apply it runs under: a forward calling the op
# itself, or through a helper or two (every op made without grad pays for this search).
_SEARCH_DEPTH = 4


class _Call:
    """One apply() call, until its node is reported."""

    __slots__ = ("args", "ctx", "module", "names", "site")

    def __init__(self, ctx, site, module, args, names: dict) -> None:
        self.ctx, self.site, self.module, self.args = weakref.ref(ctx), site, module, args
        self.names = names  # id(arg) -> the variable it was passed as, in apply()'s caller


class CustomFunctions:
    def __init__(self, session) -> None:
        self.session = session
        self.registry = session.registry
        self._calls: dict[int, _Call] = {}  # node key -> its apply() call

    @property
    def pending(self) -> bool:
        """Whether a custom Function's node waits to be reported."""
        return bool(self._calls)

    def clear(self) -> None:
        self._calls.clear()

    def site_for(self, fn):
        """(site, module scope) of a custom node's apply() call, or None."""
        call = self._calls.get(id(fn.metadata))
        if call is not None and call.ctx() is fn:
            return call.site, call.module
        return None

    def note_forward(self, depth: int) -> bool:
        """Called for a torch call made with grad off, ``depth`` frames below the torch
        call's caller: if it runs inside a custom forward, remember that forward's call.
        Returns whether it runs inside one (its ops are the Function's, not a cut)."""
        frame = sys._getframe(depth + 1)
        for _ in range(_SEARCH_DEPTH):
            back = frame.f_back
            if back is None:
                return False
            depth += 1
            if back.f_code is _APPLY_CODE:
                break
            frame = back
        else:
            return False
        code = frame.f_code
        if code.co_argcount == 0:
            return True
        local = frame.f_locals
        ctx = local.get(code.co_varnames[0])
        if not isinstance(ctx, torch.autograd.function.BackwardCFunction):
            return True  # a forward without ctx (setup_context style): its node has no site
        key = id(ctx.metadata)
        known = self._calls.get(key)
        if known is not None and known.ctx() is ctx:
            return True
        args = [local.get(name) for name in code.co_varnames[1:code.co_argcount]]
        if code.co_flags & inspect.CO_VARARGS:
            args.extend(local.get(code.co_varnames[code.co_argcount], ()))
        # depth + 2: this frame, then the frames counted up to Function.apply; the site is
        # the first user frame above it, where the arguments have their names.
        caller = back.f_back
        while caller is not None and _is_internal(caller.f_code.co_filename):
            caller = caller.f_back
        # Only arguments no reported op used yet take their name from apply()'s caller
        # (see _argument): an op's output (``relu(x.mm(w1))``) needs no search of its
        # variables.
        known = self.registry.known_tensor
        wanted = set()
        for arg in args:
            if isinstance(arg, torch.Tensor):
                adapter = known(arg)
                if adapter is None or not adapter.__dict__.get("_in_op"):
                    wanted.add(id(arg))
        self._calls[key] = _Call(ctx, user_site(depth + 2), self.session.scopes.current(),
                                 args, names_in_frame(caller, wanted))
        return True

    def introduce(self, tensors: list) -> None:
        """Before a call uses ``tensors``: report the custom Function nodes behind them
        that are not reported yet, oldest first, with the arguments apply() got."""
        if not self._calls:
            return
        if events.listener is None:
            self._calls.clear()  # nobody to tell: nothing waits any more
            return
        registry = self.registry
        stack = []
        for tensor in tensors:
            fn = tensor.grad_fn
            if fn is not None and id(fn.metadata) not in registry._nodes:
                stack.append((fn, tensor))
        if not stack:
            return
        outputs: dict[int, dict[int, object]] = {}  # node key -> output_nr -> tensor
        for fn, tensor in stack:
            outputs.setdefault(id(fn.metadata), {})[tensor.output_nr] = tensor
        unknown, seen = [], set()
        pending = [fn for fn, _ in stack]
        while pending:
            fn = pending.pop()
            key = id(fn.metadata)
            if key in seen:
                continue
            seen.add(key)
            unknown.append(fn)
            call = self._calls.get(key)
            if call is not None and call.ctx() is fn:  # its inputs: outputs of older nodes
                for arg in call.args:
                    if isinstance(arg, torch.Tensor) and arg.grad_fn is not None:
                        outputs.setdefault(id(arg.grad_fn.metadata), {})[arg.output_nr] = arg
            for next_fn, _ in fn.next_functions:
                if next_fn is not None and id(next_fn.metadata) not in registry._nodes:
                    pending.append(next_fn)
        listener = events.listener
        if listener is None:
            return
        unknown.sort(key=lambda fn: fn._sequence_nr())
        for fn in unknown:
            key = id(fn.metadata)
            call = self._calls.get(key)
            if call is None or call.ctx() is not fn:
                continue
            node = registry.node(fn)  # takes its site from the call
            del self._calls[key]
            wired = [None] * max(1, node._outputs)
            for output_nr, tensor in outputs.get(key, {}).items():
                if output_nr < len(wired):
                    wired[output_nr] = registry.tensor(tensor)
            args = tuple(self._argument(arg, call.names) if isinstance(arg, torch.Tensor)
                         else arg for arg in call.args)
            self.session.emitted += 1
            listener.on_op(node, args, tuple(wired))
            self.session.used_in_op(args, wired)

    def _argument(self, tensor, names: dict):
        """The adapter of an apply() argument. One that no reported op used yet is named
        after the variable it was passed as, where tracegrad's engine finds its name too
        (the recorder names a tensor after the frame of the first op it appears in)."""
        adapter = self.registry.tensor(tensor)
        name = names.get(id(tensor))
        if name is not None and not adapter.__dict__.get("_in_op"):
            adapter.__dict__["_apply_name"] = name
        return adapter
