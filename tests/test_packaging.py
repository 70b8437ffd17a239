"""The project installs as declared: the wheel's contents, the entry points, a light import."""

from __future__ import annotations

import importlib.metadata
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:  # tomli is tomllib's backport; the dev extra installs it on 3.10
    import tomli as tomllib

REPO = Path(__file__).resolve().parents[1]
PYPROJECT = tomllib.loads((REPO / "pyproject.toml").read_text())


def _package_dir(package: str) -> Path:
    """Where a package's source lives, following [tool.setuptools.package-dir]."""
    mapping = PYPROJECT["tool"]["setuptools"].get("package-dir", {})
    parts = package.split(".")
    for cut in range(len(parts), 0, -1):
        prefix = ".".join(parts[:cut])
        if prefix in mapping:
            return REPO / mapping[prefix] / Path(*parts[cut:])
    return REPO / mapping.get("", ".") / Path(*parts)


def _build_wheel(tmp_path: Path) -> zipfile.ZipFile:
    # Build from a copy, so no build/ or *.egg-info is left in the checkout and no stale
    # build/lib from an earlier build can slip into the wheel.
    source = tmp_path / "source"
    source.mkdir()
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(REPO / name, source / name)
    for name in ("tracegrad", "tui"):
        shutil.copytree(REPO / name, source / name, ignore=ignore)
    wheels = tmp_path / "wheels"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "-q",
            "-w",
            str(wheels),
            str(source),
        ],
        check=True,
        timeout=120,
    )
    (wheel,) = wheels.glob("tracegrad-0.1.0-*.whl")
    return zipfile.ZipFile(wheel)


def test_wheel_contains_every_declared_package_and_its_data(tmp_path: Path) -> None:
    with _build_wheel(tmp_path) as wheel:
        names = set(wheel.namelist())
        entry_points = next(n for n in names if n.endswith(".dist-info/entry_points.txt"))
        entry_points_text = wheel.read(entry_points).decode()

    packages = PYPROJECT["tool"]["setuptools"]["packages"]
    missing = [p for p in packages if p.replace(".", "/") + "/__init__.py" not in names]
    assert not missing, f"packages declared in pyproject.toml but not in the wheel: {missing}"

    expected_data = {"tracegrad/py.typed"}
    for package, patterns in PYPROJECT["tool"]["setuptools"]["package-data"].items():
        for pattern in patterns:
            for path in _package_dir(package).glob(pattern):
                expected_data.add(package.replace(".", "/") + "/" + path.name)
    assert expected_data <= names, f"missing from the wheel: {sorted(expected_data - names)}"

    assert "tracegrad = tracegrad.cli:main" in entry_points_text
    assert "tracegrad = tracegrad.testing.plugin" in entry_points_text


def test_import_tracegrad_stays_light() -> None:
    heavy = ("textual", "graphviz", "cupy", "pytest", "torch")
    code = (
        "import sys, tracegrad\n"
        f"heavy = {heavy!r}\n"
        "print(tracegrad.__file__)\n"
        "print(' '.join(sorted(m for m in sys.modules if m.split('.')[0] in heavy)))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code],
        check=False,
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    init_file, imported = result.stdout.split("\n")[:2]
    # A folder without __init__.py imports as an empty namespace package, which proves nothing.
    expected = REPO / "tracegrad" / "__init__.py"
    assert init_file == str(expected), f"`import tracegrad` did not load {expected} (missing?)"
    assert imported == "", f"`import tracegrad` imported: {imported}"


def test_console_script_and_pytest_plugin_are_declared() -> None:
    entry_points = importlib.metadata.distribution("tracegrad").entry_points
    declared = {(e.group, e.name): e.value for e in entry_points}
    assert declared.get(("console_scripts", "tracegrad")) == "tracegrad.cli:main"
    assert declared.get(("pytest11", "tracegrad")) == "tracegrad.testing.plugin"
