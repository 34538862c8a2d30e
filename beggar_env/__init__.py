"""beggar-env: Beggar-My-Neighbour as a research environment.

The rules engine lives in :mod:`beggar_env.core`; deals and their notations in
:mod:`beggar_env.deals`; single games and batches in :mod:`beggar_env.game`; the
``Beggar-v0`` Gymnasium environment (registered on import) in :mod:`beggar_env.env`,
its vector env in :mod:`beggar_env.vector`, datasets in :mod:`beggar_env.datasets`, the
search for the longest deals in :mod:`beggar_env.search`, Ray workers in
:mod:`beggar_env.distributed`.

Submodules and the names below are imported on first use, so that ``import beggar_env``
(and the ``beggar`` command) load only what they need; ``Beggar-v0`` is registered with
Gymnasium when Gymnasium is imported, before or after this package.
"""

import importlib
import importlib.abc
import importlib.util
import sys

__version__ = "0.1.0"

_EXPORTS = {
    "OUTCOMES": "core",
    "Deal": "deals",
    "format_deal": "deals",
    "parse_deal": "deals",
    "random_deal": "deals",
    "random_deals": "deals",
    "GameResult": "game",
    "play": "game",
    "simulate": "game",
    "simulate_blocks": "game",
    "trace": "game",
}
_SUBMODULES = (
    "baselines",
    "checks",
    "cli",
    "columns",
    "core",
    "datasets",
    "deals",
    "distributed",
    "env",
    "evaluate",
    "features",
    "files",
    "finds",
    "forecasters",
    "game",
    "jit",
    "render",
    "rollouts",
    "sb3",
    "search",
    "searchers",
    "shards",
    "stats",
    "streaming",
    "task",
    "vector",
)
__all__ = sorted(_EXPORTS)


def __getattr__(name):
    if name in _EXPORTS:
        value = getattr(importlib.import_module(f".{_EXPORTS[name]}", __name__), name)
        globals()[name] = value
        return value
    if name in _SUBMODULES:
        return importlib.import_module(f".{name}", __name__)
    raise AttributeError(f"module 'beggar_env' has no attribute {name!r}")


def __dir__():
    return sorted([*globals(), *_EXPORTS, *_SUBMODULES])


def _register(gymnasium):
    if "Beggar-v0" not in gymnasium.registry:
        gymnasium.register(
            id="Beggar-v0",
            entry_point="beggar_env.env:make",
            vector_entry_point="beggar_env.vector:BeggarVectorEnv",
        )


class _RegisterOnImport(importlib.abc.MetaPathFinder):
    """Registers ``Beggar-v0`` as soon as Gymnasium is imported, whenever that is: the
    engine and the ``beggar`` command never pay for importing Gymnasium."""

    def find_spec(self, name, path=None, target=None):
        if name != "gymnasium":
            return None
        sys.meta_path.remove(self)
        spec = importlib.util.find_spec(name)
        if spec is not None and spec.loader is not None:
            load = spec.loader.exec_module

            def exec_module(module):
                load(module)
                _register(module)

            spec.loader.exec_module = exec_module
        return spec


if "gymnasium" in sys.modules:
    _register(sys.modules["gymnasium"])
else:
    sys.meta_path.insert(0, _RegisterOnImport())
