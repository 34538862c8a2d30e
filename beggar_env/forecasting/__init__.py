"""Forecasting the winner: forecasters from trivial to Bayes-optimal, one evaluation
protocol for all of them, and the published study.

* :mod:`~beggar_env.forecasting.forecasters`: the interface (``fit``/``predict_proba``/
  ``act``) and the baselines;
* :mod:`~beggar_env.forecasting.features`: the engineered features the learned ones read;
* :mod:`~beggar_env.forecasting.rollouts`: the compiled play-outs behind the Bayes
  forecaster and the oracle;
* :mod:`~beggar_env.forecasting.protocol`: test sets and the runner: :func:`evaluate`
  (any forecaster or policy, on the published protocol) gives a :class:`Report`;
  :func:`compare` gives the paired difference of two;
* :mod:`~beggar_env.forecasting.metrics`: the figures, pure functions over arrays (scores,
  calibration, slices and bins, bootstrap intervals, the gap closed): a new metric goes here;
* :mod:`~beggar_env.forecasting.report`: :class:`Report` (a row of the published tables, a
  submission file), its layouts, schema and ``given``; its rules in
  :mod:`~beggar_env.forecasting.report_rules`;
* :mod:`~beggar_env.forecasting.study`: ``beggar baselines``, the published study and its tables;
* :mod:`~beggar_env.forecasting.events`: the per-step encoding a sequence model reads;
  :mod:`~beggar_env.forecasting.sequences` (games as PyTorch training data) and
  :mod:`~beggar_env.forecasting.sequence_models` (a GRU and a causal transformer over the
  stream) need torch and are imported on their own;
* playing the game forward: :mod:`~beggar_env.forecasting.transitions` (the rules of one
  card as a table) and :mod:`~beggar_env.forecasting.machine` (the queue machine, its
  rollouts, the compute-accuracy curve), compiled; :mod:`~beggar_env.forecasting.step_model`
  (the learned step) and :mod:`~beggar_env.forecasting.full_view` (networks of the full
  view) need torch, and train in :mod:`~beggar_env.forecasting.training`'s one loop, as
  the sequence models do;
* playing it forward with no machine given, from the cards' faces:
  :mod:`~beggar_env.forecasting.face_streams` (games as streams of face tokens, compiled) and
  :mod:`~beggar_env.forecasting.stream_model` (a causal transformer over them, rolled out);
  :mod:`~beggar_env.forecasting.trick_targets` (positions a trick apart, compiled) and
  :mod:`~beggar_env.forecasting.looped_steps` (a looped transformer, each iteration a trick);
  the last two of each pair need torch.

``docs/forecasting.md`` gives the reasons for each choice, ``docs/results.md`` the figures.
"""

from . import events, features, forecasters, metrics, protocol, report, rollouts, study
from .forecasters import Forecaster
from .protocol import TestSet, compare, evaluate, evaluate_policy
from .report import Report

__all__ = [
    "Forecaster",
    "Report",
    "TestSet",
    "compare",
    "evaluate",
    "evaluate_policy",
    "events",
    "features",
    "forecasters",
    "metrics",
    "protocol",
    "report",
    "rollouts",
    "study",
]
