"""Training one run (``train_one``) or a group of runs that differ only in rate and seed
(``train_group``): ``data`` stages a run's splits, ``loop`` trains and tests, ``evaluate`` scores
a split, ``group`` batches several runs through one step. Nothing here knows of analyses or
stores (``evalsuite.pipeline`` does)."""
from __future__ import annotations

from .data import Graded, make_data, split_seed, stage
from .evaluate import autocast_for, evaluate
from .group import group_key, train_group
from .loop import (Diverged, Trained, TrainingState, convergence, lr_factor, make_optimizer, train_one, train_step,
                   training_loss)

__all__ = ["Diverged", "Graded", "Trained", "TrainingState", "autocast_for", "convergence", "evaluate", "group_key",
           "lr_factor", "make_data", "make_optimizer", "split_seed", "stage", "train_group", "train_one", "train_step",
           "training_loss"]
