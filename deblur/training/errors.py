"""Why training stops: every error class the training package raises, in one place."""

from __future__ import annotations

from deblur.errors import DeblurError


class TrainingError(DeblurError, RuntimeError):
    """Training stopped; the message says why and what was kept."""


class TrainingInterrupted(TrainingError):
    exit_code = 130  # as a shell reports Ctrl-C


class StrategyError(DeblurError, RuntimeError):
    """The devices or the cluster (TF_CONFIG) asked for cannot be used."""


class RunFolderError(DeblurError, RuntimeError):
    """The run folder cannot be resumed or written: it belongs to another config, or its files are damaged."""
