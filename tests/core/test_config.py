import pytest

from evalsuite import config as cfg
from evalsuite.config import RunConfig
from evalsuite.errors import ConfigError
from evalsuite.overrides import parse_value
from evalsuite.resolve import preset_base, resolve


def test_defaults_are_filled_and_canonical():
    c = resolve("recall", "linear").as_dict()
    assert c["task"] == {"name": "recall", "vocab_size": 256, "seq_len": 64, "num_kv_pairs": 8, "power_a": 0.01,
                         "random_non_queries": False, "filler_vocab": 0}
    assert c["model"]["feature_map"] == "elu1" and c["model"]["normalize"] == "z"
    assert c["model"]["max_len"] == 64  # learned positions sized to the task
    assert c["train"]["lr"] == 3e-3 and c["seed"] == 0


def test_overrides_dotted_and_bare():
    c = resolve("recall", "softmax", overrides=["train.lr=0.01", "d_model=32", "num_kv_pairs=4"])
    assert c.train.lr == 0.01 and c.model.base.d_model == 32 and c.task.section["num_kv_pairs"] == 4
    c2 = resolve("recall", "softmax", overrides={"lr": 0.01, "model.d_model": 32, "num_kv_pairs": 4})
    assert c2 == c and c2.as_dict() == c.as_dict()


def test_run_id_is_hash_of_config_and_seed():
    a = resolve("recall", "linear")
    assert a.run_id == cfg.run_id(a.as_dict()) == resolve("recall", "linear").run_id
    assert a.run_id != resolve("recall", "linear", seed=1).run_id
    assert a.run_id != resolve("recall", "linear", overrides=["train.lr=0.002"]).run_id
    # spelling an override with its default value does not change the identity
    assert a.run_id == resolve("recall", "linear", overrides=["model.normalize=z"]).run_id
    with pytest.raises(TypeError):  # the hash reads a dict, never an object's repr
        cfg.run_id(a)


def test_a_stored_config_reads_back_as_the_same_run():
    for config in (resolve("recall", "linear"), resolve("recall", "softmax", preset="tiny", seed=3),
                   resolve("recall", "linear", overrides={"task.segments": [{"num_kv_pairs": 2}, {"num_kv_pairs": 4}],
                                                          "task.eval_segments": [{"seq_len": 128, "num_test": 10}],
                                                          "model.positions": "none"})):
        back = RunConfig.from_dict(config.as_dict())
        assert back.as_dict() == config.as_dict() and back.run_id == config.run_id
        assert [n for _, n in back.task.evals] == [n for _, n in config.task.evals]
    moved = config.replace(lr=0.01, seed=2, epochs=4)
    assert (moved.train.lr, moved.seed, moved.train.epochs) == (0.01, 2, 4.0) and moved.run_id != config.run_id


def test_a_setting_is_a_configuration_at_every_seed_rate_and_budget():
    """``setting_key``: what escalation (``replace``) changes is all it leaves out, so a 4x rerun on
    another seed is the same setting and a run one width or one pair count away is not."""
    a = resolve("recall", "linear")
    key = cfg.setting_key(a.as_dict())
    assert cfg.setting_key(a.replace(lr=0.01, seed=3, epochs=12, warmup_steps=40).as_dict()) == key
    for other in (["model.d_model=32"], ["num_kv_pairs=4"], ["train.batch_size=32"], ["train.weight_decay=0.0"]):
        assert cfg.setting_key(resolve("recall", "linear", overrides=other).as_dict()) != key, other
    assert cfg.setting_key(resolve("recall", "softmax").as_dict()) != key


@pytest.mark.parametrize("kwargs, message", [
    (dict(task="recal", model="linear"), r"--task: unknown task 'recal'. Did you mean 'recall'"),
    (dict(task="recall", model="linaer"), r"--model: unknown model 'linaer'. Did you mean 'linear'"),
    (dict(task="recall", model="linear", overrides=["num_kv_pairs=40"]), r"4 x num_kv_pairs <= seq_len"),
    (dict(task="recall", model="linear", overrides=["vocab_size=12", "num_kv_pairs=8"]), r"use vocab_size >= 18"),
    (dict(task="recall", model="linear", overrides=["d_model=-4"]), r"model.d_model: .*greater than or equal to 1"),
    (dict(task="recall", model="linear", overrides=["lr=abc"]), r"train.lr: Input should be a valid number"),
    (dict(task="recall", model="linear", overrides=["train.foo=1"]), r"unknown key 'foo' in section 'train'\. Valid keys: batch_size"),
    (dict(task="recall", model="linear", overrides=["nonsense=1"]), r"--set nonsense: unknown key"),
    (dict(task="recall", model="linear", overrides=["bogus.lr=1"]), r"unknown section 'bogus'"),
    (dict(task="recall", model="linear", overrides=["lr"]), r"expected KEY=VALUE"),
    (dict(task="recall", model="linear", feature_map="eluu"), r"--feature-map: unknown feature map 'eluu'.*'elu1'"),
    (dict(task="recall", model="softmax", feature_map="elu1"), r"uses no feature map"),
    (dict(task="recall", model="linear", feature_map="identity"), r"z-denominator"),
    (dict(task="recall", model="linear", overrides=["n_heads=3"]), r"divisible by n_heads"),
    (dict(task="recall", model="linear", preset="huge"), r"--preset: unknown preset 'huge' for task 'recall'\. Available: default"),
    (dict(task="recall", model="linear", overrides=["model.normalize=zz"]), r"model.normalize: Input should be 'z', 'rmsnorm' or 'none'"),
    (dict(task="recall", model="linear", seed=-1), r"--seed"),
])
def test_invalid_input_names_the_parameter(kwargs, message):
    with pytest.raises(ConfigError, match=message):
        resolve(**kwargs)


def test_identity_map_allowed_without_denominator():
    c = resolve("recall", "linear", feature_map="identity", overrides=["normalize=rmsnorm"])
    assert c.model.base.feature_map == "identity"


def test_parse_value():
    assert parse_value("1e-3") == 0.001
    assert parse_value("true") is True
    assert parse_value("null") is None
    assert parse_value("elu1") == "elu1"


def test_every_task_preset_names_its_model_and_train_settings(monkeypatch):
    from evalsuite import tasks

    for name, cls in tasks.TASKS.items():
        for preset in cls.presets:
            assert preset_base(cls, preset) in cfg.PRESETS, (name, preset)
    recall = tasks.TASKS.get("recall")
    monkeypatch.setitem(recall.presets, "orphan", dict(seq_len=64))  # neither global nor in preset_bases
    with pytest.raises(ConfigError, match="preset 'orphan' names no model and train settings"):
        resolve("recall", "linear", preset="orphan")


def test_a_remembered_model_build_counts_what_a_fresh_build_counts_and_a_bad_one_is_refused_every_time():
    """resolve remembers the parameter count of a model that built (a sweep's points differ in rate and
    seed, not model): the count equals one from a fresh build of each spec, and a spec that cannot
    build is refused again, not served from memory."""
    from evalsuite import resolve as res
    from evalsuite.models import mixer_class

    res._BUILT.clear()
    for model, overrides in [("linear", {}), ("linear", {"model.feature_dim": 8}), ("delta", {}),
                             ("linear", {"model.feature_map": "dpfp"}), ("linear", {"train.lr": 0.01})]:
        config = resolve("recall", model, preset="tiny", overrides=overrides)
        fresh = sum(p.numel() for p in config.model.build(config.task.vocab_size).parameters())
        again = res._check_model_builds(config.model, config.task.vocab_size, mixer_class(model))
        assert again == fresh, (model, overrides)
    assert len(res._BUILT) == 4  # the rate changes no model: its build was remembered
    for _ in range(2):
        with pytest.raises(ConfigError, match="n_heads|divide"):
            resolve("recall", "linear", preset="tiny", overrides={"model.n_heads": 3})
