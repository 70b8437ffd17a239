"""How much of torch 2.13's public API tracegrad has, namespace by namespace.

    .venv/bin/python bench/coverage.py            # the table
    .venv/bin/python bench/coverage.py --missing  # and every missing name, per namespace

A namespace's public names are its ``__all__`` where it has one (``torch``,
``torch.optim``), otherwise every name ``dir()`` shows without a leading underscore, minus
modules imported from elsewhere (``torch.nn.functional.math``). ``torch.Tensor``'s are the
class's public attributes. tracegrad "has" a name when the same attribute lookup succeeds
on its counterpart (a miss raises tracegrad's "does not implement" AttributeError); for
``Tensor`` the lookup is on a tensor, where instance attributes (``requires_grad``) live.
"""

from __future__ import annotations

import argparse
import sys
import types
import warnings
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

NAMESPACES = ("torch", "torch.Tensor", "torch.nn", "torch.nn.functional", "torch.optim",
              "torch.linalg")


@dataclass
class Coverage:
    namespace: str
    names: list[str]
    missing: list[str] = field(default_factory=list)

    @property
    def present(self) -> int:
        return len(self.names) - len(self.missing)


def _resolve(root, dotted: str):
    target = root
    for part in dotted.split(".")[1:]:
        target = getattr(target, part)
    return target


def public_names(namespace) -> list[str]:
    declared = getattr(namespace, "__all__", None)
    if declared is not None and not isinstance(namespace, type):
        return sorted(set(declared))
    names = []
    prefix = getattr(namespace, "__name__", "") + "."
    for name in dir(namespace):
        if name.startswith("_"):
            continue
        value = getattr(namespace, name, None)
        if isinstance(value, types.ModuleType) and not value.__name__.startswith(prefix):
            continue  # a module imported from elsewhere, not part of this namespace
        names.append(name)
    return sorted(names)


def _has(target, name: str) -> bool:
    """Whether ``target.name`` exists: a property that raises something other than
    AttributeError for this particular tensor (``.H`` of a batch) still exists."""
    try:
        with warnings.catch_warnings():  # deprecated attributes warn when read
            warnings.simplefilter("ignore")
            getattr(target, name)
    except AttributeError:
        return False
    except Exception:  # noqa: BLE001 - it exists; this tensor just can't give it
        return True
    return True


def measure() -> list[Coverage]:
    import torch

    import tracegrad

    table = []
    for dotted in NAMESPACES:
        theirs = _resolve(torch, dotted)
        ours = _resolve(tracegrad, dotted.replace("torch", "tracegrad", 1))
        if dotted == "torch.Tensor":
            ours = tracegrad.ones(2, 2, requires_grad=True) * 1  # a non-leaf: .grad_fn etc.
        coverage = Coverage(dotted, public_names(theirs))
        for name in coverage.names:
            if not _has(ours, name):
                coverage.missing.append(name)
        table.append(coverage)
    return table


def render(table: list[Coverage], missing: bool = False) -> str:
    import torch

    lines = [f"tracegrad coverage of torch {torch.__version__}'s public names", "",
             f"{'namespace':<22}{'torch':>7}{'tracegrad':>11}{'share':>8}"]
    for row in table:
        share = 100 * row.present / max(len(row.names), 1)
        lines.append(f"{row.namespace:<22}{len(row.names):>7}{row.present:>11}{share:>7.1f}%")
    total = sum(len(row.names) for row in table)
    present = sum(row.present for row in table)
    lines.append(f"{'all':<22}{total:>7}{present:>11}{100 * present / max(total, 1):>7.1f}%")
    if missing:
        for row in table:
            lines += ["", f"missing from {row.namespace} ({len(row.missing)}):"]
            lines += [f"  {name}" for name in row.missing]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--missing", action="store_true",
                        help="list every torch name tracegrad lacks")
    arguments = parser.parse_args(argv)
    print(render(measure(), arguments.missing))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
