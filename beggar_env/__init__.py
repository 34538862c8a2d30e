"""beggar-env: Beggar-My-Neighbour as a research environment.

The house, lowest floor first (each module or wing imports only from those below it):

* the engine: :mod:`~beggar_env.core` (the rules, compiled), :mod:`~beggar_env.deals`
  (deals and their notations), :mod:`~beggar_env.game` (one game or many),
  :mod:`~beggar_env.task` (the forecasting task: observations, scoring, the env kernels),
  :mod:`~beggar_env.stats` (summaries), :mod:`~beggar_env.jit` (numba's settings);
* shared: :mod:`~beggar_env.checks` (every argument check), :mod:`~beggar_env.files`
  (safe writes, locks, clean-up after a killed run), :mod:`~beggar_env.distributed` (Ray workers);
* the wings: :mod:`~beggar_env.envs` (``Beggar-v0``, registered with Gymnasium, and its
  vector env), :mod:`~beggar_env.datasets` (in memory and Parquet shards),
  :mod:`~beggar_env.search` (the longest and never-ending deals), :mod:`~beggar_env.cycles`
  (the cycle census, backward play, new cycles from known ones),
  :mod:`~beggar_env.forecasting` (forecasters, the protocol, the published study);
* :mod:`~beggar_env.cli`: the ``beggar`` command.

Submodules and the names below are imported on first use, so that ``import beggar_env``
(and the ``beggar`` command) load only what they need; ``Beggar-v0`` is registered with
Gymnasium when Gymnasium is imported, before or after this package.
"""

import importlib
import importlib.abc
import importlib.util
import sys
import threading

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
    "checks",
    "cli",
    "compiling",
    "core",
    "cycles",
    "datasets",
    "deals",
    "distributed",
    "envs",
    "files",
    "forecasting",
    "game",
    "jit",
    "search",
    "stats",
    "task",
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
            entry_point="beggar_env.envs.env:make",
            vector_entry_point="beggar_env.envs.vector:BeggarVectorEnv",
        )


class _RegisterOnImport(importlib.abc.MetaPathFinder):
    """Registers ``Beggar-v0`` as soon as Gymnasium is imported, whenever that is: the
    engine and the ``beggar`` command never pay for importing Gymnasium.

    It stays first in ``sys.meta_path`` until Gymnasium has been loaded: a mere
    ``importlib.util.find_spec("gymnasium")`` (TorchRL asks so when it is imported) must not
    use it up."""

    def __init__(self):
        self._asking = threading.local()  # set while it asks the other finders itself

    def find_spec(self, name, path=None, target=None):
        if name != "gymnasium" or getattr(self._asking, "now", False):
            return None
        self._asking.now = True
        try:
            spec = importlib.util.find_spec(name)
        finally:
            self._asking.now = False
        if spec is not None and spec.loader is not None:
            load = spec.loader.exec_module

            def exec_module(module):
                load(module)
                _register(module)
                if self in sys.meta_path:
                    sys.meta_path.remove(self)

            spec.loader.exec_module = exec_module
        return spec


if "gymnasium" in sys.modules:
    _register(sys.modules["gymnasium"])
else:
    sys.meta_path.insert(0, _RegisterOnImport())
