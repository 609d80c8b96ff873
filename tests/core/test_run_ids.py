"""Run ids are a store's keys: a refactoring that changed them would orphan every stored run. Ids
of a few configurations are pinned as the code computed them before the typed RunConfig, every
sweep point of the committed CPU reproduction is still a run of its store, and every stored
configuration read back as a RunConfig hashes to its own id."""
from pathlib import Path

import pytest

from evalsuite import reproduce
from evalsuite.config import RunConfig, run_id
from evalsuite.resolve import resolve
from evalsuite.sweep import expand

PINNED = [  # (task, model, resolve options, overrides) -> id, computed at a9f1b45 (before the typed RunConfig)
    ("recall", "linear", {}, {}, "34ef1a0efcbc0533"),  # `make run`
    ("recall", "softmax", {"preset": "tiny"}, {}, "99d56f10c387e140"),
    ("recall", "delta", {"seed": 1}, {"train.lr": 0.01}, "abf54ec4882bcd51"),
    ("recall", "gla", {}, {"model.gate": "scalar", "model.d_model": 16}, "896cb4aa3b35b465"),
    ("recall", "linear", {"feature_map": "dpfp"}, {"model.feature_map_options": {"nu": 2}}, "974bd601f8cb331c"),
    ("recall", "hybrid", {}, {"model.pattern": "SL"}, "0420bc168112a7fe"),
    ("word_problem", "delta", {}, {"model.negative_eigenvalues": True}, "c6395d06239c502f"),
    ("listops", "softmax", {}, {}, "7459d8444acd9d16"),
    ("recall", "swa", {}, {"model.window": 16}, "0b50f1be86a3f176"),
    ("recall", "based", {}, {}, "bae70cea8219eb60"),
    ("induction", "softmax", {"preset": "extrapolate"}, {}, "8c5aea9e88abe8b4"),
]


@pytest.mark.parametrize("task, model, options, overrides, expected", PINNED,
                         ids=[f"{t}-{m}-{e}" for t, m, _, _, e in PINNED])
def test_pinned_run_ids(task, model, options, overrides, expected):
    assert resolve(task, model, overrides=overrides, **options).run_id == expected


@pytest.fixture(scope="module")
def committed():
    """The runs and verdicts embedded in the committed CPU reproduction report."""
    from evalsuite.reports import builder

    return builder.read_embedded(Path(__file__).resolve().parents[2] / "docs" / "reproduce-cpu.html")


# experiments whose grid gained points since the committed reproduction was made (their new points
# cannot be in it until it is regenerated): name -> why
NEW_POINTS: dict[str, str] = {
    "capacity-trained": "added by issue 61 after the committed reproduction was made; its runs are reported in "
                        "docs/capacity-argmax/, not in docs/reproduce-cpu.html",
    **{name: "re-set by issue 62 where the state binds (the binding setting, capacity-trained's runs shared): the "
             "committed report holds the runs of its earlier design" for name in
       ("linear-width", "delta-vs-linear", "hybrid-recovery", "jrt", "frontier-delta", "frontier-swa", "frontier-based")},
}


def test_every_sweep_point_of_the_committed_reproduction_is_still_one_of_its_runs(committed):
    """Every experiment the committed report judged from runs still finds each of its sweep points
    there; one it shows as not run yet ("no finished run", with the command that runs it) has none
    to find."""
    ids = {r.run_id for r in committed["runs"]}
    not_run = {v.name for v in committed["verdicts"] if v.why.startswith("no finished run")}
    checked = 0
    for exp in reproduce.all_experiments():
        spec = exp.spec("cpu")
        if spec is not None and exp.name not in NEW_POINTS and exp.name not in not_run:
            missing = [p.run_id for p in expand(spec) if p.run_id not in ids]
            assert not missing, (exp.name, missing[:3])
            checked += 1
    assert checked >= 8, checked


def test_stored_configurations_read_back_as_the_same_run(committed):
    for r in committed["runs"]:
        assert run_id(r.config) == r.run_id
        assert RunConfig.from_dict(r.config).run_id == r.run_id, r.run_id


def test_a_field_that_changed_what_runs_compute_keeps_old_runs_what_they_were():
    """RWKV-7's decay_init (2026-12-06) changed its default initialisation. A run stored before has
    no decay_init: read back it is a uniform-init run with its own id (so its weights are analysed
    with the function they were trained in); a new run names rwkv7 and has a new id; asking for
    uniform today is the old run."""
    old = resolve("recall", "rwkv7", overrides={"model.decay_init": "uniform"})
    section = old.as_dict()["model"]
    assert "decay_init" not in section  # stored as the runs before the field were
    back = RunConfig.from_dict(old.as_dict())
    assert back.model.mixer.decay_init == "uniform" and back.run_id == old.run_id == run_id(old.as_dict())
    new = resolve("recall", "rwkv7")
    assert new.as_dict()["model"]["decay_init"] == "rwkv7" and new.run_id != old.run_id
    assert RunConfig.from_dict(new.as_dict()).run_id == new.run_id
    # a configuration written by hand (not stored) without the field gets today's default
    assert resolve("recall", "rwkv7", overrides={"model.feature_dim": 8}).model.mixer.decay_init == "rwkv7"
