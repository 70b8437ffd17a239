"""``tracegrad.random``: random number generators, named and used as torch's.

Every random function (``randn``, ``rand``, ``randint``, ``randperm``, ``normal``,
``bernoulli``, ``multinomial``, ``poisson``, ``Tensor.uniform_``/``normal_``/...) draws from
``default_generator`` unless given ``generator=``. A generator wraps NumPy's PCG64 bit
generator: seeding and saving/restoring state behave as in torch, but the numbers differ
from torch's Mersenne Twister stream (documented; every deterministic op matches torch).

>>> import tracegrad as torch
>>> g = torch.Generator().manual_seed(42)
>>> a = torch.rand(3, generator=g)
>>> _ = g.manual_seed(42)
>>> bool((torch.rand(3, generator=g) == a).all())
True
>>> state = torch.get_rng_state()
>>> x = torch.randn(2)
>>> torch.set_rng_state(state)
>>> bool((torch.randn(2) == x).all())
True
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator

import numpy as np

from .errors import ArgumentTypeError, InvalidValueError

# torch's default seed, so initial_seed() answers as torch's does before any manual_seed
DEFAULT_SEED = 67280421310721
_SEED_RANGE = (-(1 << 63), (1 << 64) - 1)


def _checked_seed(seed) -> int:
    try:
        value = int(seed)
    except (TypeError, ValueError):
        raise ArgumentTypeError(
            f"manual_seed expected an int, got {type(seed).__name__}") from None
    if not _SEED_RANGE[0] <= value <= _SEED_RANGE[1]:
        raise InvalidValueError(
            f"Overflow when unpacking long long (seed {value} is outside "
            f"[{_SEED_RANGE[0]}, {_SEED_RANGE[1]}])")
    return value % (1 << 64)  # a negative seed wraps to uint64, as torch does


class Generator:
    """A random number generator with its own seed and state (torch.Generator)."""

    def __init__(self, device="cpu") -> None:
        from .backends import as_device

        self.device = as_device(device)
        self._seed = DEFAULT_SEED
        self._numpy = np.random.Generator(np.random.PCG64(DEFAULT_SEED))

    def manual_seed(self, seed) -> Generator:
        self._seed = _checked_seed(seed)
        self._numpy = np.random.Generator(np.random.PCG64(self._seed))
        return self

    def seed(self) -> int:
        """Reseed from the operating system's entropy; returns the new seed."""
        value = int(np.random.SeedSequence().entropy % (1 << 63))
        self.manual_seed(value)
        return value

    def initial_seed(self) -> int:
        return self._seed

    def get_state(self):
        """The state as a uint8 tensor (torch returns a ByteTensor too)."""
        from .tensor import Tensor

        encoded = json.dumps({"seed": self._seed,
                              "state": self._numpy.bit_generator.state}).encode()
        return Tensor._wrap(np.frombuffer(encoded, dtype=np.uint8).copy(), False)

    def set_state(self, new_state) -> Generator:
        from .tensor import Tensor

        if not isinstance(new_state, Tensor) or new_state._array.dtype != np.uint8:
            raise ArgumentTypeError(
                f"expected a torch.ByteTensor, but got "
                f"{type(new_state).__name__ if not isinstance(new_state, Tensor) else new_state.dtype.name}"
                ". Hint: pass a state from get_state() / get_rng_state().")
        try:
            saved = json.loads(bytes(np.asarray(new_state._array)).decode())
            bit_generator = np.random.PCG64()
            bit_generator.state = saved["state"]
        except (ValueError, KeyError, TypeError):
            raise InvalidValueError(
                "Expected either a torch.ByteTensor from tracegrad's get_state() / "
                "get_rng_state(); this one is not (torch's states do not carry over: the "
                "generators differ).") from None
        self._seed = int(saved["seed"])
        self._numpy = np.random.Generator(bit_generator)
        return self

    def __repr__(self) -> str:
        return f"<tracegrad.Generator object at device {self.device}>"


default_generator = Generator()


def numpy_generator(generator: Generator | None = None) -> np.random.Generator:
    """The NumPy generator to draw from: ``generator``'s, or the default one."""
    if generator is None:
        return default_generator._numpy
    if not isinstance(generator, Generator):
        raise ArgumentTypeError(f"generator must be a tracegrad.Generator, not "
                                f"{type(generator).__name__}")
    return generator._numpy


def manual_seed(seed) -> Generator:
    """Seed the default generator (CUDA tensors draw from it too); returns it."""
    return default_generator.manual_seed(seed)


def seed() -> int:
    return default_generator.seed()


def initial_seed() -> int:
    return default_generator.initial_seed()


def get_rng_state():
    return default_generator.get_state()


def set_rng_state(new_state) -> None:
    default_generator.set_state(new_state)


@contextlib.contextmanager
def fork_rng(devices=None, enabled: bool = True, _caller: str = "fork_rng",
             _devices_kw: str = "devices", device_type: str = "cuda") -> Iterator[None]:
    """Restore the random state on exit, so draws inside do not change the stream after."""
    if not enabled:
        yield
        return
    state = get_rng_state()
    try:
        yield
    finally:
        set_rng_state(state)


__all__ = ["DEFAULT_SEED", "Generator", "default_generator", "fork_rng", "get_rng_state",
           "initial_seed", "manual_seed", "seed", "set_rng_state"]
