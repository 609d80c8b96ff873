"""A feature map that logs each construction (one line per layer of each model built) to
``$EVALSUITE_COUNT_LOG`` with the torch seed it was built under: how the concurrency tests count
trainings across processes."""
import os

import torch
import torch.nn.functional as F

from evalsuite.models.feature_maps import FeatureMap


class CountingElu(FeatureMap):
    def __init__(self, head_dim: int, **options):
        super().__init__(head_dim, **options)
        log = os.environ.get("EVALSUITE_COUNT_LOG")
        if log:
            with open(log, "a") as f:
                f.write(f"{torch.initial_seed()} {os.getpid()}\n")

    def forward(self, x):
        return F.elu(x) + 1
