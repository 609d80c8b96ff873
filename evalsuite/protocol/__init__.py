"""The evidence protocol: when a figure may be cited, in one place at the bottom of the house.

Every layer that reads the protocol imports it from here (config, the reports, ``reproduce``);
nothing recomputes it. What it says:

- **Rates**: a cell's rate sweep has at least ``MIN_RATES`` rates and its best (by validation)
  is not at an edge of the grid, unless that edge is at ``LR_LIMITS``.
- **Seeds**: ``MIN_SEEDS`` seeds are reported at the chosen rate (``MAX_SEEDS`` where some
  learned and some did not).
- **Budget**: below ``CEILING``, every reported seed climbs the ``LADDER`` (1x, 4x, 16x the base
  budget), each rung continuing the one below it from its snapshot; a figure is settled at the rung
  whose next rung moves no seed by ``MAX_GAIN`` or more. A cell climbs past 4x only where a clause's
  outcome depends on it. Rungs above the base stop on a plateau (``PLATEAU_GAIN``), only at the
  ceiling (``PLATEAU_ABOVE``); a rung run an older rule stopped lower is ``cut_short`` and does not
  count (its rung runs again).
- **Rates**: the rate a cell climbs at is its best by validation, and the runner-up too where the
  two are within ``RATE_TIE``; each rung's figure is read at the rate that validates best there.
- **Learned**: at least ``LEARNED_FRACTION`` of the way from the floor to 1.
- **Comparisons** need ``MARGIN`` plus both cells' seed spreads, and the same order per seed.
- **One setting**: two runs are one setting when their configurations differ only in what the
  escalation changes (``ESCALATED``: seed, rate, budget, warm-up): ``setting_key``.

``settled.unsettled`` applies these rules to a cell (``evalsuite.reproduce.cells.Cell``).
"""
from __future__ import annotations

import json
import statistics

LEARNED_FRACTION = 0.5
MIN_RATES = 3
MIN_SEEDS = 3
MAX_SEEDS = 5  # seeds are added up to this where the reported seeds disagree (some learned, some not)
MAX_GAIN = 0.05  # a rerun at the next budget that moves a seed by this much or more: the budget decides the figure
MARGIN = 0.05
LR_LIMITS = (1e-5, 0.1)  # the grid is extended past an edge only inside these
CEILING = 0.95  # cells below this get the full treatment (edges, seeds, longer budgets); above it, only the seeds
BUDGET_FACTOR = 4  # each rung of the ladder is this many times the budget of the one below it
LADDER = (1, BUDGET_FACTOR, BUDGET_FACTOR ** 2)  # the budgets a setting climbs through, as multiples of its base
RATE_TIE = 0.01  # two rates whose validation figures are this close both climb (the choice is made higher up)
# a rung above the base stops a run on a plateau: no validation gain of PLATEAU_GAIN over a window of
# passes as long as the base budget, once the run stands at PLATEAU_ABOVE or more: the ceiling, where
# the protocol asks a cell for no longer budget anyway. (It was 0.5 until issue 62: MQAR models in the
# binding setting sit near 0.55 for longer than one base budget and then jump, so a stop there ended
# 16x rungs at about 5x; ``cut_short`` reads those runs out.)
PLATEAU_GAIN = 0.005
PLATEAU_ABOVE = CEILING

# what the escalation changes: the runs of one sweep point at every seed, rate, budget and warm-up
ESCALATED = (("seed",), ("train", "lr"), ("train", "epochs"), ("train", "warmup_steps"), ("train", "plateau_window"),
             ("train", "plateau_gain"), ("train", "plateau_above"), ("train", "plateau_after"))


def canonical_json(config: dict) -> str:
    """A configuration dict as the text its run id hashes (keys sorted, no spaces)."""
    return json.dumps(config, sort_keys=True, separators=(",", ":"), default=str)


def identity(config: dict) -> dict:
    """What a run's id hashes: its canonical configuration dict, with each plug-in file (a model or
    feature map given as ``file.py:Attr``) named by its attribute and the SHA-256 of its contents
    instead of its path: the same file in another folder is the same run, an edited file another."""
    plugins = config.get("plugins")
    if not plugins:
        return config
    model = dict(config.get("model") or {})
    for key in ("name", "feature_map"):
        ref = model.get(key)
        if isinstance(ref, str) and ":" in ref:
            path, _, attr = ref.rpartition(":")
            if path in plugins:
                model[key] = f"{attr}@{plugins[path]}"
    return {**config, "model": model, "plugins": sorted(plugins.values())}


def setting_key(config: dict) -> str:
    """A stored configuration less what escalation changes (``ESCALATED``): equal for a sweep
    point's runs at every seed, rate, budget and warm-up, and for nothing else. Stored dicts are
    canonical (a late field at its default is left out), so no parsing is needed."""
    config = identity(config)  # a plug-in by its contents, not its path
    out = {**config, "train": dict(config.get("train") or {})}
    for path in ESCALATED:
        (out if len(path) == 1 else out["train"]).pop(path[-1], None)
    return canonical_json(out)


def config_key(config: dict) -> str:
    """A configuration less its learning rate and seed (the axes a table aggregates over; its budget
    stays), plug-ins by their contents (``identity``): the report's summary rows and the pivot's
    cells group runs by it."""
    config = identity(config)
    train = {k: v for k, v in config["train"].items() if k != "lr"}
    return canonical_json({**{k: v for k, v in config.items() if k != "seed"}, "train": train})


def is_escalated(path: str) -> bool:
    """Whether a dotted config path (``train.lr``) is one the escalation changes."""
    return tuple(path.split(".")) in ESCALATED


def seeds_above(a: dict, b: dict, margin: float = MARGIN) -> bool | None:
    """The comparison rule on two figures per seed (seed -> value): ``a`` above ``b`` (True) where
    every shared seed's gap exceeds ``margin`` and the mean gap exceeds ``margin`` plus both seed
    spreads (sd); not above (False) where no shared seed's gap exceeds it; None with fewer than
    ``MIN_SEEDS`` shared seeds or a mixed order."""
    seeds = sorted(set(a) & set(b))
    if len(seeds) < MIN_SEEDS:
        return None
    xa, xb = [a[s] for s in seeds], [b[s] for s in seeds]
    gaps = [x - y for x, y in zip(xa, xb)]
    spread = sum(statistics.stdev(x) if len(x) >= 2 else 0.0 for x in (xa, xb))
    if all(g > margin for g in gaps) and statistics.fmean(gaps) > margin + spread:
        return True
    return False if all(g <= margin for g in gaps) else None


def cut_short(metrics: dict) -> bool:
    """A stored rung run that stopped on a plateau where the protocol no longer stops one: below
    ``PLATEAU_ABOVE`` by its validation figure (an older, lower ``train.plateau_above``). Its figure
    is the rung's only up to where it stopped, so it does not stand for its rung: the cells leave it
    out and the escalation runs that rung again under the rule as it stands."""
    if metrics.get("stopped") != "plateau":
        return False
    val = metrics.get("val_accuracy")
    return val is None or val < PLATEAU_ABOVE
