"""bench/coverage.py prints, per torch namespace, how many public names exist and how many
tracegrad has."""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parent.parent / "bench" / "coverage.py"


def _load():
    spec = importlib.util.spec_from_file_location("coverage_script", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


@pytest.mark.torch
def test_coverage_table_prints_nonzero_counts_for_every_namespace(capsys):
    pytest.importorskip("torch")
    script = _load()
    assert script.main(["--missing"]) == 0
    output = capsys.readouterr().out
    for namespace in script.NAMESPACES:
        row = re.search(rf"^{re.escape(namespace)} +(\d+) +(\d+) +[\d.]+%$", output,
                        re.MULTILINE)
        assert row, f"no row for {namespace} in:\n{output}"
        total, present = int(row.group(1)), int(row.group(2))
        assert total > 0 and 0 < present <= total, (namespace, total, present)
    assert re.search(r"^all +\d+ +\d+ +[\d.]+%$", output, re.MULTILINE)
    assert "missing from torch.linalg (" in output


def test_public_names_skip_private_names_and_foreign_modules():
    script = _load()
    import types

    namespace = types.ModuleType("fake")
    namespace.visible = 1
    namespace._hidden = 2
    namespace.math = __import__("math")
    assert script.public_names(namespace) == ["visible"]
