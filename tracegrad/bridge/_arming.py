"""Arming the bridge when a recorded program imports torch.

An entry at the front of ``sys.meta_path`` finds torch's spec through the other finders and
wraps its loader, so that once ``torch/__init__.py`` has run, the bridge starts -- before the
program's ``import torch`` statement returns. The module keeps torch's own loader (its
``__loader__`` and ``__spec__.loader`` are set back before torch runs). The hook is removed
when the recording stops, or as soon as it has fired.
"""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Callable


class TorchImportWatcher:
    """A meta path finder that reports the end of ``import torch`` once."""

    def __init__(self, on_imported: Callable[[], None]) -> None:
        self._on_imported = on_imported
        self._searching = False

    def install(self) -> None:
        if self not in sys.meta_path:
            sys.meta_path.insert(0, self)

    def remove(self) -> None:
        if self in sys.meta_path:
            sys.meta_path.remove(self)

    def find_spec(self, name, path=None, target=None):
        if name != "torch" or self._searching:
            return None
        self._searching = True  # the search below asks every finder again, this one too
        try:
            spec = importlib.util.find_spec(name)
        finally:
            self._searching = False
        if spec is None or spec.loader is None:
            return None
        spec.loader = _ArmingLoader(spec.loader, self._imported)
        return spec

    def _imported(self) -> None:
        self.remove()
        self._on_imported()


class _ArmingLoader:
    """torch's loader, calling back once the module has run."""

    def __init__(self, loader, on_loaded: Callable[[], None]) -> None:
        self._loader, self._on_loaded = loader, on_loaded

    def create_module(self, spec):
        return self._loader.create_module(spec)

    def exec_module(self, module) -> None:
        module.__loader__ = self._loader  # torch sees its own loader, as without tracing
        if module.__spec__ is not None:
            module.__spec__.loader = self._loader
        self._loader.exec_module(module)
        self._on_loaded()

    def __getattr__(self, name):
        return getattr(self._loader, name)
