"""The published study (``beggar baselines``): train the learned baselines, evaluate every
forecaster with the one protocol (:mod:`beggar_env.forecasting.protocol`) for 2, 3 and 4
players, with the game statistics of each player count, and write the results: JSON,
markdown tables and pictures (``docs/results.md``). One concern a module:

* :mod:`.settings`: the protocols (``FULL``, ``QUICK``), the seeds, the study's own rows;
* :mod:`.run`: the run itself, a player count at a time;
* :mod:`.gaps`: the gap each row closes between the seat prior and Bayes;
* :mod:`.results`: ``results.json``, its schema, and reports added as rows;
* :mod:`.tables` and :mod:`.figures`: ``tables.md`` and the pictures;
* :mod:`.folder`: the folder written whole, and drawn again (``--redraw``).
"""

from . import figures, folder, gaps, results, run, settings, tables

__all__ = ["figures", "folder", "gaps", "results", "run", "settings", "tables"]
