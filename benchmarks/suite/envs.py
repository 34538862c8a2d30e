"""The envs: ``Beggar-v0`` against a do-nothing env with its spaces, the native vector env
against gymnasium's ``SyncVectorEnv``, and the counted observation's cost."""

import copy
import time

import numpy as np

from .context import benchmark
from .printing import fmt_rate, section, table, targets, verdict
from .timing import interleaved_best, steps_for


def register_trivial_env():
    """Register ``Trivial-v0``: Beggar-v0's spaces, and nothing else. Its reset and step
    return fresh copies of one fixed sample observation, reward 0.0, never ending: the
    cost of a step through ``gym.make``'s wrappers with no game behind it. (Defined here,
    not at the top, so that ``--list`` does not import gymnasium.)"""
    import gymnasium as gym

    if "Trivial-v0" in gym.registry:
        return

    class TrivialEnv(gym.Env):
        metadata = {"render_modes": []}

        def __init__(self, observation_space=None, action_space=None):
            if observation_space is None or action_space is None:
                beggar = gym.make("Beggar-v0").unwrapped
                if observation_space is None:
                    observation_space = beggar.observation_space
                if action_space is None:
                    action_space = beggar.action_space
            self.observation_space = copy.deepcopy(observation_space)
            self.action_space = copy.deepcopy(action_space)
            self.observation_space.seed(0)
            # As arrays, like Beggar-v0's: Box.sample() gives numpy scalars for shape ().
            self._sample = {
                k: np.array(v, self.observation_space[k].dtype) for k, v in self.observation_space.sample().items()
            }

        def _observation(self):
            return {k: v.copy() for k, v in self._sample.items()}

        def reset(self, *, seed=None, options=None):
            super().reset(seed=seed)
            return self._observation(), {}

        def step(self, action):
            return self._observation(), 0.0, False, False, {}

    gym.register(id="Trivial-v0", entry_point=TrivialEnv)


@benchmark("env")
def bench_env(ctx):
    """Beggar-v0 steps/s (gymnasium's benchmark_step) vs a do-nothing env with its spaces."""
    import gymnasium as gym
    from gymnasium.utils.performance import benchmark_step

    import beggar_env  # noqa: F401 (registers Beggar-v0)

    register_trivial_env()
    rounds = ctx.args.repeats
    duration = 0.2 if ctx.args.quick else 0.5
    section(f"env: single-env steps/s, gymnasium benchmark_step({duration} s), best of {rounds}")

    # The envs are made once and reused round after round: with numba's dispatch on record
    # dtypes a later instance can be a little slower than the first, which is not what
    # this compares.
    beggar = gym.make("Beggar-v0")
    trivial = gym.make(
        "Trivial-v0",
        observation_space=beggar.unwrapped.observation_space,
        action_space=beggar.unwrapped.action_space,
    )
    for env in (beggar, trivial):  # JIT, caches and the env checker's first-call checks
        env.reset(seed=ctx.args.seed)
        for _ in range(100):
            if env.step(env.action_space.sample())[2]:
                env.reset()
    contenders = {
        "Beggar-v0": (lambda: benchmark_step(beggar, target_duration=duration), None, True),
        "Trivial-v0 (does nothing)": (lambda: benchmark_step(trivial, target_duration=duration), None, True),
    }
    best = interleaved_best(contenders, rounds)
    rate = {name: max(runs) for name, (_, _, runs) in best.items()}
    spread = {name: min(runs) for name, (_, _, runs) in best.items()}
    table(
        ["env (gym.make, default wrappers)", "steps/s (best)", "worst round", "us/step"],
        [[name, f"{rate[name]:,.0f}", f"{spread[name]:,.0f}", f"{1e6 / rate[name]:.2f}"] for name in rate],
    )
    ratio = rate["Beggar-v0"] / rate["Trivial-v0 (does nothing)"]
    targets([["Beggar-v0 / Trivial-v0", f"{ratio:.2f}", ">= 0.7", verdict(ratio, 0.70)]], "ratio (steps/s)")
    print(
        "(Trivial-v0: Beggar-v0's spaces; reset/step return copies of one fixed sample, reward 0.0, never ending;"
        " both step with action_space.sample() as benchmark_step does)"
    )
    ctx.figure(
        f"Beggar-v0 single env: {rate['Beggar-v0'] / 1e3:,.0f} k steps/s (gymnasium benchmark_step), "
        f"{ratio:.2f}x a do-nothing env with the same spaces ({rate['Trivial-v0 (does nothing)'] / 1e3:,.0f} k steps/s)"
    )


@benchmark("vector")
def bench_vector(ctx):
    """The native vector env (gym.make_vec) vs SyncVectorEnv, env-steps/s at 1 to 8192 envs."""
    import gc

    import gymnasium as gym

    import beggar_env  # noqa: F401 (registers Beggar-v0)

    quick = ctx.args.quick
    sizes = (1, 64, 1024, 8192)
    rounds = ctx.args.repeats
    sync_rounds = min(rounds, 3)
    native_round_s = 0.1 if quick else 0.25
    sync_total_s = 0.5 if quick else 1.5  # the slow baseline's timed steps, all its rounds together, per N
    options = dict(observation="public", step_unit="card", forecast="label")
    section(
        f"vector: env-steps/s, {', '.join(f'{k}={v}' for k, v in options.items())}; native best of {rounds} "
        f"(~{native_round_s} s each), SyncVectorEnv best of {sync_rounds} (~{sync_total_s} s in all per N)"
    )
    rng = np.random.default_rng(ctx.args.seed)
    rows, rate, native_class = [], {}, None
    for n in sizes:
        actions = rng.integers(0, 3, n, dtype=np.int64)  # fixed random labels: no sampling in the timings
        native = gym.make_vec("Beggar-v0", num_envs=n, **options)
        native_class = type(native).__name__
        t = time.perf_counter()
        sync = gym.vector.SyncVectorEnv([lambda: gym.make("Beggar-v0", **options)] * n)
        sync_make = time.perf_counter() - t
        native.reset(seed=ctx.args.seed)
        sync.reset(seed=ctx.args.seed)
        # Warm-up: the JIT (or its cache), and the env checker's first-step checks of each
        # of Sync's envs; then a fixed number of steps per round, from timing a few more.
        for _ in range(3):
            native.step(actions)
        sync.step(actions)
        native_steps = steps_for(lambda: native.step(actions), native_round_s)
        sync_steps = steps_for(lambda: sync.step(actions), sync_total_s / sync_rounds)

        def run(env, steps):
            for _ in range(steps):
                env.step(actions)

        best = interleaved_best(
            {
                "native": (lambda: run(native, native_steps), None, False),
                "sync": (lambda: run(sync, sync_steps), sync_rounds, False),
            },
            rounds,
        )
        rate[n] = {"native": native_steps * n / best["native"][0], "sync": sync_steps * n / best["sync"][0]}
        rows.append(
            [
                f"{n:,}",
                f"{native_steps:,}",
                fmt_rate(rate[n]["native"]),
                f"{sync_steps:,}",
                fmt_rate(rate[n]["sync"]),
                f"{rate[n]['native'] / rate[n]['sync']:,.1f}x",
                f"{sync_make:.1f}",
            ]
        )
        native.close()
        sync.close()
        native = sync = None  # free them before the next size
        gc.collect()
    table(
        [
            "num_envs",
            "native steps",
            "native env-steps/s",
            "Sync steps",
            "Sync env-steps/s",
            "native/Sync",
            "Sync make s",
        ],
        rows,
    )
    print(
        f"(native: gym.make_vec -> {native_class}; Sync: gymnasium.vector.SyncVectorEnv over gym.make('Beggar-v0');"
        " steps = vector steps per timed round, env-steps = steps x num_envs, autoresets included)"
    )
    top, mid = sizes[-1], 1024
    target_rows = [
        [
            f"native env-steps/s at {top:,} envs",
            fmt_rate(rate[top]["native"]),
            ">= 10.0 M",
            verdict(rate[top]["native"], 10e6),
        ],
        [
            f"native/Sync at {mid:,} envs",
            f"{rate[mid]['native'] / rate[mid]['sync']:,.1f}x",
            ">= 50x",
            verdict(rate[mid]["native"] / rate[mid]["sync"], 50),
        ],
    ]
    targets(target_rows)
    ctx.figure(
        f"native vector env: {fmt_rate(rate[top]['native'])} env-steps/s at {top:,} envs, "
        f"{fmt_rate(rate[mid]['native'])} at {mid:,}; {rate[mid]['native'] / rate[mid]['sync']:,.0f}x "
        f"SyncVectorEnv at {mid:,} envs ({rate[top]['native'] / rate[top]['sync']:,.0f}x at {top:,})"
    )


@benchmark("counted")
def bench_counted(ctx):
    """The vector env's step with observation="counted" against "public", in the same run."""
    import gymnasium as gym

    import beggar_env  # noqa: F401 (registers Beggar-v0)

    n = 1024 if ctx.args.quick else 8192
    section(f"counted: vector env steps, {n:,} envs, observation='counted' against 'public'")
    rng = np.random.default_rng(ctx.args.seed)
    actions = rng.integers(0, 3, n, dtype=np.int64)
    envs = {
        (level, copy): gym.make_vec("Beggar-v0", num_envs=n, observation=level, copy=copy)
        for copy in (True, False)
        for level in ("public", "counted")
    }
    for env in envs.values():
        env.reset(seed=ctx.args.seed)
    steps = steps_for(lambda: envs["public", True].step(actions), 0.1 if ctx.args.quick else 0.3)

    def run(env):
        def steps_of(env):
            for _ in range(steps):  # kept by no one: interleaved_best keeps what a round returns
                env.step(actions)

        return lambda: steps_of(env)

    best = interleaved_best({key: (run(env), None, True) for key, env in envs.items()}, ctx.args.repeats)
    rate = {key: steps * n / best[key][0] for key in envs}
    ratio = {copy: rate["public", copy] / rate["counted", copy] for copy in (True, False)}
    table(
        ["observation", "copy", "env-steps/s"], [[level, str(copy), fmt_rate(r)] for (level, copy), r in rate.items()]
    )
    print(
        f"time per step, counted / public: {ratio[True]:.2f} (target <= 1.5: "
        f"{'ok' if ratio[True] <= 1.5 else 'above target'}); with copy=False (no fresh arrays): {ratio[False]:.2f}"
    )
    ctx.figure(
        f"vector env, {n:,} envs: counted observation {fmt_rate(rate['counted', True])} env-steps/s, "
        f"{ratio[True]:.2f}x the public one's time per step ({fmt_rate(rate['public', True])}); with copy=False "
        f"{fmt_rate(rate['counted', False])}, {ratio[False]:.2f}x ({fmt_rate(rate['public', False])})"
    )
