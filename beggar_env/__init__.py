"""beggar-env: Beggar-My-Neighbour as a research environment.

The rules engine lives in :mod:`beggar_env.core`; deals and their notations in
:mod:`beggar_env.deals`; single games and batches in :mod:`beggar_env.game`.
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
