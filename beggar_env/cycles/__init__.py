"""Cycles: the games that never end, and the deals that reach them (``beggar cycles``).

* :mod:`~beggar_env.cycles.census`: play many positions (random ones of any split, or
  every deal of a deck) and name every cycle reached; its file, written as it runs and
  continued with ``resume``; on a GPU, :mod:`~beggar_env.cycles.gpu_census`, over the
  compiled steps both share (:mod:`~beggar_env.cycles.cycle_keys`: a position placed,
  played to its cycle, the cycle's canonical key);
* :mod:`~beggar_env.cycles.backward`: backward play, the positions one trick before a
  given one;
* :mod:`~beggar_env.cycles.reconstruct`: the balanced deals that reach a cycle, and
  longer games behind a game, by backward play;
* :mod:`~beggar_env.cycles.insertion`: new cycles from known ones, a card at a time.

``docs/cycles.md`` has the method, the published runs and what they found.
"""
