"""The forecasters: the Bayes forecaster's rollouts against ``simulate``, and a recurrent
forecaster acting in the vector env and training."""

import numpy as np

from .context import benchmark
from .printing import fmt_rate, section, table
from .timing import interleaved_best, steps_for


@benchmark("bayes")
def bench_bayes(ctx):
    """The Bayes forecaster (K=256) on random 2-player positions: positions/s, and its
    rollouts' cards/s against simulate's cards/s in the same run."""
    import beggar_env
    from beggar_env import datasets
    from beggar_env.forecasting import forecasters

    games = 100 if ctx.args.quick else 400
    section(f"bayes: BayesMC(k=256) on every card step of {games} random 2-player games, against simulate")
    data = datasets.generate(games, observation="counted", seed=ctx.args.seed)
    obs = data.fields
    bayes = forecasters.BayesMC(2, k=256, seed=ctx.args.seed)
    bayes.predict_proba({name: value[:64] for name, value in obs.items()})  # compile or load
    n_sim = ctx.args.games

    def forecast():
        before = bayes.cards_played
        bayes.predict_proba(obs)
        return bayes.cards_played - before

    def play():
        return int(beggar_env.simulate(n_sim, seed=ctx.args.seed).cards.sum())

    best = interleaved_best({"bayes": (forecast, None, True), "simulate": (play, None, True)}, ctx.args.repeats)
    positions_s = len(data) / best["bayes"][0]
    bayes_cards = best["bayes"][1] / best["bayes"][0]
    sim_cards = best["simulate"][1] / best["simulate"][0]
    open_share = float(((obs["unseen"] > 0).sum(axis=1) >= 2).mean())
    table(
        ["what", "figure"],
        [
            ["positions", f"{len(data):,} ({open_share:.0%} open: 256 rollouts each; the rest 1)"],
            ["Bayes positions/s", fmt_rate(positions_s)],
            ["Bayes rollout cards/s", fmt_rate(bayes_cards)],
            [f"simulate({n_sim:,}) cards/s", fmt_rate(sim_cards)],
        ],
    )
    ratio = bayes_cards / sim_cards
    print(
        f"positions/s: {positions_s:,.0f} (target >= 8,000: {'ok' if positions_s >= 8000 else 'below target'}); "
        f"cards/s ratio {ratio:.2f} (target >= 0.5: {'ok' if ratio >= 0.5 else 'below target'})"
    )
    ctx.figure(
        f"Bayes forecaster, k=256, 2 players: {fmt_rate(positions_s)} positions/s; its rollouts play "
        f"{fmt_rate(bayes_cards)} cards/s, {ratio:.2f}x simulate's {fmt_rate(sim_cards)}"
    )


@benchmark("sequence")
def bench_sequence(ctx):
    """A recurrent forecaster (GRU, 128 units, public) acting in the vector env at 1,024 envs
    against the env stepping alone, and its training steps/s (torch on one thread)."""
    try:
        import torch  # noqa: F401
    except ImportError:
        print("sequence: skipped: torch is not installed (pip install 'beggar-env[rl]')")
        return
    import gymnasium as gym

    import beggar_env  # noqa: F401 (registers Beggar-v0)
    from beggar_env.forecasting import sequence_models

    n = 128 if ctx.args.quick else 1024
    section(f"sequence: a GRU forecaster (128 units, public) in the vector env, {n:,} envs, against the env alone")
    forecaster = sequence_models.SequenceForecaster(2, "public", "gru", hidden=128, seed=ctx.args.seed)
    forecaster.model = forecaster.new_model().eval()
    envs = {key: gym.make_vec("Beggar-v0", num_envs=n, forecast="probs") for key in ("alone", "forecaster")}
    obs = {}
    for key, env in envs.items():
        obs[key], _ = env.reset(seed=ctx.args.seed)
    uniform = np.full((n, 3), 1 / 3, np.float32)

    def alone():
        for _ in range(steps):
            envs["alone"].step(uniform)

    def forecasting():
        for _ in range(steps):
            obs["forecaster"], *_ = envs["forecaster"].step(forecaster.act(obs["forecaster"], "probs"))

    steps = 20
    forecasting()  # warm-up
    steps = steps_for(forecasting, 0.2 if ctx.args.quick else 1.0)
    best = interleaved_best({"alone": (alone, None, True), "forecaster": (forecasting, None, False)}, ctx.args.repeats)
    rate = {key: steps * n / best[key][0] for key in best}

    training = sequence_models.SequenceForecaster(
        2, "public", "gru", hidden=128, games=200 if ctx.args.quick else 1000, epochs=2, val_games=20, seed=1
    )
    training.fit()
    first, second = training.history
    train_rate = second["steps"] / (second["seconds"] - first["seconds"])  # the second epoch: nothing to compile
    table(
        ["what", "steps/s"],
        [
            ["vector env alone (probs)", fmt_rate(rate["alone"])],
            ["vector env + GRU act", fmt_rate(rate["forecaster"])],
            ["GRU training (lanes 128, windows of 128 steps)", fmt_rate(train_rate)],
        ],
    )
    print(
        f"forecasts/s at {n:,} envs: {fmt_rate(rate['forecaster'])} (target >= 100 k: "
        f"{'ok' if rate['forecaster'] >= 1e5 else 'below target'}); {rate['alone'] / rate['forecaster']:.1f}x the "
        f"time of the env alone"
    )
    ctx.figure(
        f"GRU forecaster in the vector env, {n:,} envs: {fmt_rate(rate['forecaster'])} forecasts/s, "
        f"{rate['alone'] / rate['forecaster']:.1f}x the env alone's time ({fmt_rate(rate['alone'])}); "
        f"training {fmt_rate(train_rate)} steps/s"
    )
