"""The typed run configuration: ``RunConfig`` (task, model, train, seed), presets, run ids.

``evalsuite.resolve.resolve`` validates what a user asked for (a task, a model, a preset, ``--set`` overrides) into
one ``RunConfig``, which the pipeline, the trainer, sweeps and executors pass along as it is. Its
canonical dict (``RunConfig.as_dict``: every default filled in, keys sorted when hashed) is what
a run record stores, and a run's identity (``run_id``) is the hash of that dict, seed included:
the store caches and resumes by it. A stored dict is read back with ``RunConfig.from_dict``.
"""
from __future__ import annotations

import dataclasses
import hashlib

from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Literal

from pydantic import ConfigDict, Field

from evalsuite import tasks as task_zoo
from evalsuite.models import ModelSpec
from evalsuite.params import Params
from evalsuite.protocol import canonical_json, identity, setting_key  # noqa: F401 - identity and setting, defined with the protocol
from evalsuite.records import TARGET_ACCURACY

MAX_SEGMENTS = 64  # training segments plus eval segments: each gets its own data seed
MAX_EXAMPLES = 10_000_000  # examples in one eval segment's test set


class TrainConfig(Params):
    model_config = ConfigDict(extra="forbid", frozen=True)

    lr: float = Field(1e-3, gt=0, le=10, description="peak learning rate (AdamW)")
    weight_decay: float = Field(0.1, ge=0, description="AdamW weight decay on matrices")
    batch_size: int = Field(64, ge=1, description="examples per step")
    epochs: float = Field(1.0, gt=0, description="passes over the training split")
    num_train: int = Field(10_000, ge=1, description="training examples")
    num_val: int = Field(500, ge=1, description="validation examples (early stopping)")
    num_test: int = Field(1_000, ge=1, description="test examples (the reported accuracy)")
    warmup_frac: float = Field(0.05, ge=0, lt=1, description="fraction of steps spent warming up the learning rate")
    warmup_steps: int | None = Field(None, ge=0, description="warm-up in steps, in place of warmup_frac: a longer budget "
                                     "at the same peak rate then takes the shorter run's steps until that run's decay "
                                     "begins, and starts from the point the shorter run saved there")
    schedule: Literal["wsd", "constant", "cosine"] = Field(
        "wsd", description="after warm-up: wsd holds the peak rate and decays linearly to 10% over the last decay_frac "
        "of the budget (a late learner is not annealed before it takes off); constant never decays; cosine decays "
        "from the start")
    decay_frac: float = Field(0.2, ge=0, le=1, description="wsd: fraction of the budget spent decaying")
    grad_clip: float = Field(1.0, ge=0, description="gradient-norm clip; 0 disables")
    eval_every: int = Field(100, ge=1, description="steps between validation passes")
    patience: int = Field(0, ge=0, description="validation passes without improvement before stopping; 0 disables")
    plateau_window: int = Field(0, ge=0, description="stop on a plateau: once the best validation accuracy of the "
                                "last plateau_window passes beats the best before them by less than plateau_gain "
                                "(and the best so far is at least plateau_above); 0 disables")
    plateau_gain: float = Field(0.005, ge=0, le=1, description="the least validation gain over plateau_window passes "
                                "that keeps a run training")
    plateau_above: float = Field(0.0, ge=0, le=1, description="a plateau stops a run only at or above this validation "
                                 "accuracy (one at its floor may still be about to jump)")
    plateau_after: int = Field(0, ge=0, description="no plateau stop before this step (a rung of the ladder: the steps it "
                               "shares with the rung below it, so that continuing that rung equals training afresh)")
    target_accuracy: float = Field(TARGET_ACCURACY, gt=0, le=1, description="stop once validation accuracy reaches this (Zoology: 0.99)")
    stop_at_target: bool = Field(True, description="stop at target_accuracy; false trains the whole budget and keeps the "
                                 "latest of the checkpoints that validate best (length extrapolation: a model stopped "
                                 "the moment it fits the training length may not have found a length-general solution)")
    precision: Literal["auto", "fp32", "bf16"] = Field("auto", description="auto: bf16 autocast on CUDA, fp32 on CPU")
    resample_every: int = Field(0, ge=0, description="steps between redraws of random feature maps (performer); 0 never")
    compile: bool = Field(False, description="train through torch.compile (opt in); falls back to eager with a warning "
                          "where no compiler works; the first step's time, compilation included, is compile_time_s")

    LATE_FIELDS = frozenset({"compile", "warmup_steps", "stop_at_target", "plateau_window", "plateau_gain", "plateau_above",
                             "plateau_after"})

    def warmup(self, total_steps: int) -> int:
        """Warm-up steps of a run of ``total_steps``."""
        return self.warmup_steps if self.warmup_steps is not None else int(total_steps * self.warmup_frac)

    def branch_step(self, total_steps: int) -> int | None:
        """The step at which this run's training state is still the one any longer run at the same
        peak rate and warm-up would have (wsd: where its decay begins); None where there is none
        (cosine decays from the start; a constant schedule's end is an evaluation point a longer
        run may not share)."""
        step = total_steps - int(total_steps * self.decay_frac)
        # constant would branch at its end, where the shorter run evaluates and a longer one may not
        return step if self.schedule == "wsd" and 0 < step < total_steps else None


# Named presets: model and train settings; each task adds its own parameters of the same name.
PRESETS: dict[str, dict[str, Any]] = {
    "default": {
        "description": "a few minutes on a laptop CPU at most (softmax stops early); elu+1 learns MQAR at d_model 64, D 8 in it",
        "model": dict(d_model=64, n_layers=2, n_heads=1, conv_kernel=4),
        "train": dict(lr=3e-3, batch_size=64, num_train=40_000, epochs=8, eval_every=50),
    },
    "zoology-readme": {
        "description": "Zoology's README-plot protocol (030325_new_arch): 2 layers, 2 heads, no MLP, no positions, batch 256, 32 epochs of 180,000 examples; GPU scale",
        "model": dict(d_model=128, n_layers=2, n_heads=2, conv_kernel=3, mlp_ratio=0, positions="none"),
        "train": dict(lr=0.00316, batch_size=256, num_train=180_000, num_test=1_000, epochs=32, eval_every=1000),
    },
    "extrapolate": {
        "description": "the default preset without learned positions (the short convolution supplies order), for test lengths beyond training",
        "model": dict(d_model=64, n_layers=2, n_heads=1, conv_kernel=4, positions="none"),
        "train": dict(lr=3e-3, batch_size=64, num_train=40_000, epochs=8, eval_every=50),
    },
    "tiny": {
        "description": "seconds; for tests and smoke checks",
        "model": dict(d_model=32, n_layers=2, n_heads=1, conv_kernel=4),
        "train": dict(lr=3e-3, batch_size=32, num_train=256, num_val=64, num_test=64, epochs=1, eval_every=4),
    },
    "zoology": {
        "description": "Zoology figure 2 protocol (2 layers, 1 head, no MLP, no convolution); GPU scale",
        "model": dict(d_model=64, n_layers=2, n_heads=1, conv_kernel=0, positions="learned"),
        "train": dict(lr=1e-3, batch_size=64, num_train=100_000, num_test=3_000, epochs=64, eval_every=1000),
    },
}


@dataclass(frozen=True, eq=False)
class TaskSpec:
    """A validated task section: the training mixture (each task with its share), the eval
    segments (each with its own test-set size, or None for the run's ``num_test``), and the
    canonical section a record stores."""

    name: str
    section: dict
    mixture: tuple[tuple[Any, float], ...]
    evals: tuple[tuple[Any, int | None], ...] = ()

    @classmethod
    def from_section(cls, section: dict) -> "TaskSpec":
        """The tasks of a canonical (stored) task section."""
        params = {k: v for k, v in section.items() if k not in ("name", "segments", "eval_segments")}
        name = section["name"]
        mixture = [(task_zoo.get(name, **params), 1.0)]
        if "segments" in section:
            mixture = [(task_zoo.get(name, **{k: v for k, v in s.items() if k != "share"}), s["share"])
                       for s in section["segments"]]
        evals = [(task_zoo.get(name, **{k: v for k, v in s.items() if k != "num_test"}), s.get("num_test"))
                 for s in section.get("eval_segments", [])]
        return cls(name, section, tuple(mixture), tuple(evals))

    @property
    def train_tasks(self) -> list:
        return [t for t, _ in self.mixture]

    @property
    def tasks(self) -> list:
        """Every task: the training mixture's, then the eval segments'."""
        return self.train_tasks + [t for t, _ in self.evals]

    @property
    def vocab_size(self) -> int:
        return max(t.vocab_size for t in self.tasks)

    def eval_sizes(self, num_test: int) -> list[int]:
        """Examples in each eval segment's test set: its own ``num_test``, else the run's."""
        return [num_test if n is None else n for _, n in self.evals]


@dataclass(frozen=True, eq=False)
class RunConfig:
    """One run, validated and typed: its task, model, training settings and seed (and the digests
    of any plug-in files it loads). Equal when their run ids are."""

    task: TaskSpec
    model: ModelSpec
    train: TrainConfig
    seed: int
    plugins: dict[str, str] = field(default_factory=dict)
    preset: str | None = None  # the named preset it was resolved from: recorded (the run's env), never hashed

    def as_dict(self) -> dict:
        """The canonical dict a record stores and the run id hashes."""
        out = {"task": self.task.section, "model": self.model.section(), "train": self.train.model_dump(), "seed": self.seed}
        if self.plugins:
            out["plugins"] = dict(self.plugins)  # contents, not names: an edited file is a new run
        return out

    @cached_property
    def run_id(self) -> str:
        return run_id(self.as_dict())

    @classmethod
    def from_dict(cls, data: dict, preset: str | None = None) -> "RunConfig":
        """A stored configuration read back (it was validated when it was resolved)."""
        return cls(TaskSpec.from_section(data["task"]), ModelSpec.parse(data["model"], stored=True), TrainConfig(**data["train"]),
                   data["seed"], dict(data.get("plugins") or {}), preset)

    def replace(self, *, lr: float | None = None, epochs: float | None = None, seed: int | None = None,
                warmup_steps: int | None = None, **train) -> "RunConfig":
        """The same run at another rate, budget, warm-up or seed, or with other settings the
        escalation sets (``protocol.ESCALATED``: a rung's plateau stop); ``protocol.setting_key`` is
        what it keeps."""
        train = {**self.train.model_dump(), **train, **({"lr": lr} if lr is not None else {}),
                 **({"epochs": float(epochs)} if epochs is not None else {}),
                 **({"warmup_steps": warmup_steps} if warmup_steps is not None else {})}
        return dataclasses.replace(self, train=TrainConfig(**train), seed=self.seed if seed is None else seed)

    def __eq__(self, other) -> bool:
        return isinstance(other, RunConfig) and other.run_id == self.run_id

    def __hash__(self) -> int:
        return hash(self.run_id)

    def __reduce__(self):
        # to a worker process as its canonical dict: plug-in classes live in modules a fresh
        # process has not imported, so it parses the dict (loading the plug-ins) instead
        return (RunConfig.from_dict, (self.as_dict(), self.preset))

    def __repr__(self) -> str:
        return f"RunConfig({self.run_id}: {self.model.name} on {self.task.name}, seed {self.seed})"


def run_id(config: dict) -> str:
    """Identity of a run: hash of its canonical configuration dict (``identity``: plug-ins by
    content, not path), which includes the seed (``RunConfig.run_id`` for a resolved one)."""
    if not isinstance(config, dict):
        raise TypeError(f"run_id takes a configuration dict (RunConfig.as_dict()), got {type(config).__name__}")
    return hashlib.sha256(canonical_json(identity(config)).encode()).hexdigest()[:16]


def path_run_id(config: dict) -> str:
    """A plug-in run's id as it was before plug-ins were identified by content (the path hashed
    too): runs stored then keep it, and reports that embed them still check against it."""
    return hashlib.sha256(canonical_json(config).encode()).hexdigest()[:16]
