"""``import agentworld`` registers the ``agentworld/*`` Gymnasium ids, without importing Gymnasium.

Gymnasium 1.x dropped plugin discovery (the ``gymnasium.envs`` entry points of 0.26): a
package's ids exist once the package is imported, as ``ale_py``'s and ``minigrid``'s do.
Importing Gymnasium (and numpy with it) from ``import agentworld`` would about double the
time that import takes, and most uses of agentworld never touch Gymnasium. So the ids are
registered at once when Gymnasium is already imported, and otherwise right after Gymnasium's
own import finishes, in whichever order a program imports the two.
"""

from __future__ import annotations

import importlib.abc
import importlib.util
import sys
import warnings
from types import ModuleType
from typing import Any


def _register() -> None:
    try:
        import agentworld.envs.gym  # noqa: F401 - registers the ids at import
    except Exception as exc:  # a broken registration must not break the user's `import gymnasium`
        warnings.warn(f"agentworld's Gymnasium ids are not registered: {type(exc).__name__}: {exc}", stacklevel=2)


class _AfterGymnasium(importlib.abc.MetaPathFinder):
    """Finds no module itself: takes the spec the other finders give for ``gymnasium`` and
    makes executing that module register the ids too, then leaves ``sys.meta_path``."""

    def find_spec(self, fullname: str, path: Any, target: ModuleType | None = None) -> Any:
        if fullname != "gymnasium":
            return None
        if self in sys.meta_path:
            sys.meta_path.remove(self)  # once; and the lookup below must not come back here
        spec = importlib.util.find_spec(fullname)
        loader = spec.loader if spec is not None else None
        if loader is None or not hasattr(loader, "exec_module"):
            return spec
        run = loader.exec_module

        def exec_module(module: ModuleType) -> None:
            run(module)
            _register()

        loader.exec_module = exec_module  # type: ignore[method-assign] - this spec's own loader instance
        return spec


def register_on_import() -> None:
    """Register now if Gymnasium is imported, else once it is (nothing if it is not installed)."""
    if "gymnasium" in sys.modules:
        _register()
    elif importlib.util.find_spec("gymnasium") is not None and not any(isinstance(f, _AfterGymnasium) for f in sys.meta_path):
        sys.meta_path.insert(0, _AfterGymnasium())
