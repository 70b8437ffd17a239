"""NumPy's floating-point warnings, silenced where PyTorch is silent.

``x / 0``, ``exp(1000.)`` and ``log(0.)`` give inf or nan in PyTorch and nothing is printed;
NumPy prints a ``RuntimeWarning`` for each (and a program running with warnings as errors
stops). tracegrad computes with NumPy, so it silences them: around each backward pass (the
engine), and in the forwards of the ops that can produce them. User code that runs inside
a pass (hooks, custom Functions) gets the user's own setting back (``as_user``).

The state is NumPy's own (``np.errstate``), per thread. Entering ``np.errstate`` costs
1-3 µs, a large share of a small op, so where NumPy keeps the state in a context variable
(NumPy 2) ``silence``/``restore`` set and reset that variable directly (~0.1 µs).

>>> import numpy as np
>>> token = silence()
>>> try:
...     float(np.float32(1.0) / np.float32(0.0))
... finally:
...     restore(token)
inf
"""

from __future__ import annotations

import functools
import warnings

import numpy as np

try:  # NumPy 2: the error state is a context variable holding an "extobj"
    from numpy._core._ufunc_config import _extobj_contextvar as _state
except ImportError:  # pragma: no cover - NumPy 1.x: the (slower) public API
    _state = None

if _state is not None:
    with np.errstate(all="ignore"):
        _SILENT = _state.get()

    # C-level callables, not Python functions: an op's forward calls these (div, exp, sum),
    # and a Python frame each way was most of their cost.
    silence = functools.partial(_state.set, _SILENT)
    silence.__doc__ = """Ignore NumPy's floating-point errors until ``restore(token)``; returns
    the token."""
    restore = _state.reset  # undo the ``silence`` (or ``as_user``) that gave the token
    current = _state.get  # the error state now, to hand back to user code with ``as_user``
    as_user = _state.set  # put a state from ``current`` in force until ``restore(token)``

else:  # pragma: no cover

    def silence():
        return np.seterr(all="ignore")

    def restore(token) -> None:
        np.seterr(**token)

    def current():
        return np.geterr()

    def as_user(user_state):
        return np.seterr(**user_state)


# What NumPy raises for an inf or nan when the program made warnings errors (a
# RuntimeWarning) or set np.seterr(all="raise") (a FloatingPointError).
FLOAT_ERRORS = (RuntimeWarning, FloatingPointError)


def retry(function, *args):
    """``function(*args)`` with NumPy's floating-point warnings off: the rare path of a hot
    forward whose NumPy call raised one of ``FLOAT_ERRORS`` (a pure computation, safe to
    run again), so the common path pays nothing.

    >>> import operator, numpy as np
    >>> float(retry(operator.truediv, np.float64(1.0), np.float64(0.0)))
    inf
    """
    token = silence()
    try:
        return function(*args)
    finally:
        restore(token)


def silenced(forward):
    """Decorator: ``forward`` runs with NumPy's floating-point warnings off -- for an op's
    forward that can make an inf or nan (a reduction, a matrix product, a NumPy function
    written in Python), where the ~0.2 µs this costs is small beside the work. (Hot
    elementwise forwards instead catch the rare ``RuntimeWarning`` raised as an error and
    compute again silenced: nothing extra when no warning is raised.)

    >>> import numpy as np
    >>> float(silenced(np.log)(np.float64(0.0)))
    -inf
    """

    @functools.wraps(forward)
    def run(*args, **kwargs):
        token = silence()
        try:
            return forward(*args, **kwargs)
        finally:
            restore(token)

    return run


# NumPy's floating-point RuntimeWarnings raised in tracegrad's own code ("overflow
# encountered in multiply", ...) are not shown: torch computes the same inf or nan without
# a word. The filter is process-wide state, so it is narrow: this category, these four
# messages, and only warnings NumPy attributes to a tracegrad module (the frame that called
# the ufunc) -- never one from the user's own NumPy code. A program that turns warnings into
# errors after importing tracegrad puts its filter first; for that case the forwards silence
# NumPy themselves (``silenced``, ``quiet``) and each backward pass runs silenced.
FLOAT_WARNINGS = r"(overflow|invalid value|divide by zero|underflow) encountered in "


def install_filter() -> None:
    """Put the filter in force (done once, when tracegrad is imported). A
    ``warnings.catch_warnings()`` block around that import -- as pytest has around
    collection -- drops it again on exit; the forwards' own silencing still holds then."""
    warnings.filterwarnings("ignore", message=FLOAT_WARNINGS, category=RuntimeWarning,
                            module=r"tracegrad\.")


install_filter()


class quiet:
    """``with quiet():`` -- NumPy's floating-point warnings off for the block.

    >>> import numpy as np
    >>> with quiet():
    ...     float(np.log(np.float64(0.0)))
    -inf
    """

    __slots__ = ("_token",)

    def __enter__(self) -> None:
        self._token = silence()

    def __exit__(self, *exc_info) -> None:
        restore(self._token)
