"""Hunting the longest and never-ending deals: ``beggar search``.

* :mod:`~beggar_env.search.searchers`: the compiled searchers (random and local search)
  and the jobs that run a range of their work units;
* :mod:`~beggar_env.search.gpu_searchers`: the same searchers on a GPU
  (``backend="cuda"``), over searchers' own steps;
* :mod:`~beggar_env.search.finds`: what a search keeps: the deals found, the top lists and
  the JSON-lines results file;
* :mod:`~beggar_env.search.driver`: :func:`search`, which runs a search here or on Ray,
  on a GPU, saves and resumes it.

``docs/search.md`` describes the strategies and the published runs.
"""

from .driver import SearchReport, SearchStatus, results_path, search
from .finds import OBJECTIVES, Find, FindsFile, TopLists
from .searchers import STRATEGIES

__all__ = [
    "OBJECTIVES",
    "STRATEGIES",
    "Find",
    "FindsFile",
    "SearchReport",
    "SearchStatus",
    "TopLists",
    "results_path",
    "search",
]
