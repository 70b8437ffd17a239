"""Anomaly mode: record where each node was made, and stop at the first NaN in backward."""

from __future__ import annotations

from .grad_mode import state


def is_anomaly_enabled() -> bool:
    return state.anomaly


class detect_anomaly:
    """Context manager (and decorator) enabling anomaly detection.

    While it is on, every node remembers the forward line that created it, backward raises
    at the first node whose gradient holds NaN (naming that node and line), and the in-place
    error names the in-place op and its line.
    """

    def __init__(self, check_nan: bool = True) -> None:
        self.check_nan = check_nan

    def __enter__(self) -> None:
        self._previous = (state.anomaly, state.anomaly_check_nan)
        state.anomaly, state.anomaly_check_nan = True, self.check_nan

    def __exit__(self, *exc_info) -> None:
        state.anomaly, state.anomaly_check_nan = self._previous

    def __call__(self, function):
        import functools

        @functools.wraps(function)
        def wrapper(*args, **kwargs):
            with detect_anomaly(self.check_nan):
                return function(*args, **kwargs)

        return wrapper


class set_detect_anomaly:
    """Turn anomaly detection on or off; takes effect at once, and as a context restores."""

    def __init__(self, mode: bool, check_nan: bool = True) -> None:
        self._previous = (state.anomaly, state.anomaly_check_nan)
        state.anomaly, state.anomaly_check_nan = bool(mode), check_nan

    def __enter__(self) -> None:
        pass

    def __exit__(self, *exc_info) -> None:
        state.anomaly, state.anomaly_check_nan = self._previous
