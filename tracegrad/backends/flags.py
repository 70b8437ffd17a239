"""The rest of torch.backends that programs touch: ``cpu``, ``mkl``, ``opt_einsum``, and
``cuda``'s switches (``torch.backends.cuda.matmul.allow_tf32``). Kept as plain attributes,
with no effect on NumPy or CuPy (which have no such switches).
"""

from __future__ import annotations

from types import SimpleNamespace


def _cpu_capability() -> str:
    return "DEFAULT"


def _no() -> bool:
    return False


cpu = SimpleNamespace(get_cpu_capability=_cpu_capability)
mkl = SimpleNamespace(is_available=_no)
opt_einsum = SimpleNamespace(is_available=_no, enabled=False, strategy=None)
matmul = SimpleNamespace(allow_tf32=False, allow_fp16_reduced_precision_reduction=True,
                         allow_bf16_reduced_precision_reduction=True)
