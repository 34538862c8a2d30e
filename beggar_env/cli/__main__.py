"""``python -m beggar_env.cli``: the ``beggar`` command."""

from . import run

run()
