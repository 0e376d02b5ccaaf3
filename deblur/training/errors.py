"""Why training stops: every error class the training package raises, in one place."""

from __future__ import annotations

from deblur.errors import DeblurError, Interrupted


class TrainingError(DeblurError, RuntimeError):
    """Training stopped; the message says why and what was kept."""


class TrainingInterrupted(TrainingError, Interrupted):
    """Ctrl-C or SIGTERM during training: a checkpoint was saved, or no step had been taken (exit 130, as every
    stopped command)."""


def stopped_setting_up() -> TrainingInterrupted:
    """A stop before the first step (the data checked, the model built, the checkpoint read): it had said nothing."""
    return TrainingInterrupted(
        "stopped while setting up, before any step: nothing was trained or lost; the same command starts it again "
        "(from its last checkpoint, if it has one)"
    )


class StrategyError(DeblurError, RuntimeError):
    """The devices or the cluster (TF_CONFIG) asked for cannot be used."""


class RunFolderError(DeblurError, RuntimeError):
    """The run folder cannot be resumed or written: it belongs to another config, or its files are damaged."""
