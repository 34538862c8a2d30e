"""beggar-env: Beggar-My-Neighbour as a research environment.

The rules engine lives in :mod:`beggar_env.core`; deals and their notations in
:mod:`beggar_env.deals`; single games and batches in :mod:`beggar_env.game`; the
``Beggar-v0`` Gymnasium environment (registered on import) in :mod:`beggar_env.env`.
"""

from .core import OUTCOMES
from .deals import Deal, format_deal, parse_deal, random_deal, random_deals
from .game import GameResult, play, simulate, trace

__all__ = [
    "OUTCOMES",
    "Deal",
    "GameResult",
    "format_deal",
    "parse_deal",
    "play",
    "random_deal",
    "random_deals",
    "simulate",
    "trace",
]
__version__ = "0.1.0"


def _register():
    import gymnasium

    if "Beggar-v0" not in gymnasium.registry:
        gymnasium.register(
            id="Beggar-v0",
            entry_point="beggar_env.env:BeggarEnv",
            vector_entry_point="beggar_env.vector:BeggarVectorEnv",
        )


_register()
