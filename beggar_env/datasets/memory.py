"""Datasets in memory: :class:`Dataset` (samples of random games with their outcomes),
:func:`generate` (at compiled speed on all cores) and ``.npz`` files.

Game ``i`` of a dataset is game ``i`` of ``simulate(n_games, seed=seed)``; where its
samples are taken is :mod:`beggar_env.datasets.samples`'s.
"""

from dataclasses import dataclass, field

import numpy as np

from .. import checks, core, files, task
from ..game import CHUNKS_PER_THREAD
from ..jit import parallel
from .samples import GAMES_PER_WRITE, most_samples, parse_samples, play_games, sample_counts, write_samples


@dataclass
class Dataset:
    """Samples of random games (rows), with the outcome of each sample's game.

    ``observations`` is (n_samples, width) int32, each row exactly what
    ``gymnasium.spaces.flatten(env.observation_space, obs)`` (and ``FlattenObservation``)
    gives for that position: the fields sorted by name, ``columns`` names each slot
    (``alive_0, ..., pile_0, ...``), and ``fields`` gives them by name (views, as the env's
    ``Dict`` observation). Per sample: ``game``
    (its game's index), ``outcome`` (1 win, 2 cycle, 3 limit: ``beggar_env.OUTCOMES``),
    ``winner`` (seat, -1 none), ``label`` (the env's forecast label: the winner, or
    n_players for none), ``game_cards`` and ``game_tricks`` (its game's length, to the
    end or the first repeat), ``progress`` (cards played so far / game_cards) and
    ``weight`` (1 / the samples of its game, so that each game counts once). With
    ``faces``, the rows hold the faces view too (``pile_faces``, ``played``, and
    ``hand_faces`` when full: ``task.Layout``).
    """

    observations: np.ndarray
    game: np.ndarray
    outcome: np.ndarray
    winner: np.ndarray
    game_cards: np.ndarray
    game_tricks: np.ndarray
    n_players: int
    observation: str = "public"
    samples: str = "card"
    seed: int = 0
    faces: bool = False
    layout: task.Layout = field(init=False, repr=False)

    ARRAYS = ("observations", "game", "outcome", "winner", "game_cards", "game_tricks")

    def __post_init__(self):
        self.layout = task.Layout(self.n_players, self.observation, self.faces)

    def __len__(self):
        return len(self.observations)

    @property
    def columns(self) -> list:
        """The name of each column of :attr:`observations`, in order (as on disk)."""
        return list(self.layout.columns)

    @property
    def fields(self) -> dict:
        return self.layout.split(self.observations)

    @property
    def label(self) -> np.ndarray:
        return core.outcome_labels(self.winner, self.n_players)

    @property
    def progress(self) -> np.ndarray:
        return self.fields["cards"] / np.maximum(self.game_cards, 1)

    @property
    def weight(self) -> np.ndarray:
        """1 / the samples of each sample's game: weighted so, every game counts once."""
        return 1.0 / np.bincount(self.game)[self.game]

    def save(self, path) -> str:
        """Save as ``.npz`` (uncompressed; ``.npz`` is added to a name without it) and
        return the path written. The file is replaced whole or not at all."""
        arrays = {name: getattr(self, name) for name in self.ARRAYS}
        meta = dict(
            n_players=self.n_players,
            observation=self.observation,
            samples=self.samples,
            seed=self.seed,
            faces=self.faces,
        )
        return files.save_npz(path, **arrays, **meta, columns=np.array(self.columns))


# The field order of the rows of files saved before the rows took Gymnasium's sorted order
# (beggar-env 0.1.0 before issue 36): such a file has no ``columns`` and is read back by it.
UNSORTED_FIELDS = ("hand_sizes", "pile", "pile_size", "turn", "owed", "court", "alive", "cards", "tricks")
UNSORTED_EXTRAS = {"public": (), "full": ("hands",), "counted": ("known", "unseen")}


def unsorted_columns(layout, observation):
    """The column names of a row in the unsorted field order of older files."""
    shapes = {name: shape for name, shape, _, _ in layout.fields}
    order = UNSORTED_FIELDS + UNSORTED_EXTRAS[observation]
    return [column for name in order for column in task.slot_names(name, shapes[name])]


def read_npz(path) -> Dataset:
    """A :class:`Dataset` saved with :meth:`Dataset.save`; its rows are put in today's
    column order by their names (a file saved before the rows were sorted, with no
    ``columns``, by the order it was written in), so no file is read with its columns
    permuted."""
    with np.load(path, allow_pickle=False) as data:
        dataset = Dataset(
            **{name: data[name] for name in Dataset.ARRAYS},
            n_players=int(data["n_players"]),
            observation=str(data["observation"]),
            samples=str(data["samples"]),
            seed=int(data["seed"]),
            faces=bool(data["faces"]) if "faces" in data else False,  # files saved before the faces view: none
        )
        written = [str(c) for c in data["columns"]] if "columns" in data else None
    if written is None:
        written = unsorted_columns(dataset.layout, dataset.observation)
    if dataset.observations.ndim != 2 or dataset.observations.shape[1] != len(written):
        raise ValueError(f"{path}: its observations are not rows of {len(written)} columns")
    if written != dataset.columns:
        if sorted(written) != sorted(dataset.columns):
            raise ValueError(f"{path}: its columns are not those of {dataset.observation!r} observations")
        where = {name: j for j, name in enumerate(written)}
        dataset.observations = np.ascontiguousarray(dataset.observations[:, [where[c] for c in dataset.columns]])
    return dataset


def generate(
    n_games: int,
    *,
    n_players: int = 2,
    observation: str = "public",
    samples="card",
    seed=None,
    threads: int | None = None,
    max_cards: int | None = None,
    progress=None,
    faces: bool = False,
) -> Dataset:
    """Play ``n_games`` random games and return their samples as a :class:`Dataset`.

    Deterministic for an int ``seed`` whatever ``threads`` is (None: all cores).
    ``max_cards`` is the agreed limit, as in the env. ``progress``, if given, is called as
    ``progress(done, 2 * n_games)``: the games played, then the games whose samples are
    written. Raises ``MemoryError`` (before writing any sample) when the samples would
    not fit in memory.

    Parameters
    ----------
    n_games : the random games to play.
    n_players : seats at the table.
    observation : what a sample holds: ``"public"``, ``"counted"`` or ``"full"``.
    samples : ``"card"`` (every card), ``"trick"`` (every trick start) or an int k (k random steps a game).
    seed : the seed of the games (None: a fresh one).
    threads : the compiled threads (None: all cores).
    max_cards : the agreed limit of a game's cards (None: none).
    progress : ``progress(done, 2 * n_games)``, or None.
    faces : whether a sample holds the faces view too (``pile_faces``, ``played``, and
        ``hand_faces`` when full; the same games, samples and labels as without).
    """
    n_games = checks.count("n_games", n_games)
    checks.callback("progress", progress)
    config = task.EnvConfig(n_players, observation=observation, max_cards=max_cards, faces=faces)
    mode, k = parse_samples(samples)
    seed = int(checks.seed(seed))
    key = np.uint64(seed)
    settings = config.settings()
    checks.memory(
        n_games * core.result_dtype(config.n_players).itemsize,
        f"playing {n_games:,} games first",
        "generate fewer games at a time",
    )
    most = most_samples(n_games, mode, k)
    if most is not None:  # known before playing: refused before playing
        checks.memory(most * (config.layout.size * 4 + 40), f"{most:,} samples of {n_games:,} games", "fewer samples")
    with parallel(threads) as n_threads:
        work = core.new_work(n_threads * CHUNKS_PER_THREAD, config.n_players, task.CAPACITY)
        face_rows = task.new_faces(len(work[0]), config.n_players, config.faces)
        results = core.new_results(n_games, config.n_players)
        report = None if progress is None else lambda done: progress(done, 2 * n_games)
        play_games(key, 0, results, config.max_cards, work, report)
        counts = sample_counts(results, mode, k)
        offsets = np.zeros(n_games + 1, np.int64)
        np.cumsum(counts, out=offsets[1:])
        n_samples = int(offsets[-1])
        checks.memory(
            n_samples * (config.layout.size * 4 + 40),
            f"{n_samples:,} samples of {n_games:,} games",
            "generate fewer games, or fewer samples per game (samples='trick' or an int k)",
        )
        obs = np.empty((n_samples, config.layout.size), np.int32)
        for lo in range(0, n_games, GAMES_PER_WRITE):
            hi = min(lo + GAMES_PER_WRITE, n_games)
            write_samples(key, lo, results[lo:hi], offsets[lo : hi + 1], mode, k, settings, obs, work[0], face_rows)
            if progress is not None:
                progress(n_games + hi, 2 * n_games)
    game = np.repeat(np.arange(n_games, dtype=np.int64), counts)
    return Dataset(
        observations=obs,
        game=game,
        outcome=results.outcome[game],
        winner=results.winner[game],
        game_cards=results.cards[game],
        game_tricks=results.tricks[game],
        n_players=config.n_players,
        observation=observation,
        samples=str(samples),
        seed=seed,
        faces=config.faces,
    )
