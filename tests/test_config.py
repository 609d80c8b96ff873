import pytest

from evalsuite import config as cfg


def test_defaults_are_filled_and_canonical():
    c = cfg.resolve("recall", "linear")
    assert c["task"] == {"name": "recall", "vocab_size": 256, "seq_len": 64, "num_kv_pairs": 8, "power_a": 0.01,
                         "random_non_queries": False, "filler_vocab": 0}
    assert c["model"]["feature_map"] == "elu1" and c["model"]["normalize"] == "z"
    assert c["model"]["max_len"] == 64  # learned positions sized to the task
    assert c["train"]["lr"] == 3e-3 and c["seed"] == 0


def test_overrides_dotted_and_bare():
    c = cfg.resolve("recall", "softmax", overrides=["train.lr=0.01", "d_model=32", "num_kv_pairs=4"])
    assert c["train"]["lr"] == 0.01 and c["model"]["d_model"] == 32 and c["task"]["num_kv_pairs"] == 4
    c2 = cfg.resolve("recall", "softmax", overrides={"lr": 0.01, "model.d_model": 32, "num_kv_pairs": 4})
    assert c2 == c


def test_run_id_is_hash_of_config_and_seed():
    a = cfg.resolve("recall", "linear")
    assert cfg.run_id(a) == cfg.run_id(cfg.resolve("recall", "linear"))
    assert cfg.run_id(a) != cfg.run_id(cfg.resolve("recall", "linear", seed=1))
    assert cfg.run_id(a) != cfg.run_id(cfg.resolve("recall", "linear", overrides=["train.lr=0.002"]))
    # spelling an override with its default value does not change the identity
    assert cfg.run_id(a) == cfg.run_id(cfg.resolve("recall", "linear", overrides=["model.normalize=z"]))


@pytest.mark.parametrize("kwargs, message", [
    (dict(task="recal", model="linear"), r"--task: unknown task 'recal'. Did you mean 'recall'"),
    (dict(task="recall", model="linaer"), r"--model: unknown model 'linaer'. Did you mean 'linear'"),
    (dict(task="recall", model="linear", overrides=["num_kv_pairs=40"]), r"4 x num_kv_pairs <= seq_len"),
    (dict(task="recall", model="linear", overrides=["vocab_size=12", "num_kv_pairs=8"]), r"use vocab_size >= 18"),
    (dict(task="recall", model="linear", overrides=["d_model=-4"]), r"model.d_model: .*greater than or equal to 1"),
    (dict(task="recall", model="linear", overrides=["lr=abc"]), r"train.lr: Input should be a valid number"),
    (dict(task="recall", model="linear", overrides=["train.foo=1"]), r"unknown key 'foo' in section 'train'; valid keys: batch_size"),
    (dict(task="recall", model="linear", overrides=["nonsense=1"]), r"--set nonsense: unknown key"),
    (dict(task="recall", model="linear", overrides=["bogus.lr=1"]), r"unknown section 'bogus'"),
    (dict(task="recall", model="linear", overrides=["lr"]), r"expected KEY=VALUE"),
    (dict(task="recall", model="linear", feature_map="eluu"), r"--feature-map: unknown feature map 'eluu'.*'elu1'"),
    (dict(task="recall", model="softmax", feature_map="elu1"), r"uses no feature map"),
    (dict(task="recall", model="linear", feature_map="identity"), r"z-denominator"),
    (dict(task="recall", model="linear", overrides=["n_heads=3"]), r"divisible by n_heads"),
    (dict(task="recall", model="linear", preset="huge"), r"--preset: unknown preset 'huge' for task 'recall'; available: default"),
    (dict(task="recall", model="linear", overrides=["model.normalize=zz"]), r"model.normalize: Input should be 'z', 'rmsnorm' or 'none'"),
    (dict(task="recall", model="linear", seed=-1), r"--seed"),
])
def test_invalid_input_names_the_parameter(kwargs, message):
    with pytest.raises(cfg.ConfigError, match=message):
        cfg.resolve(**kwargs)


def test_identity_map_allowed_without_denominator():
    c = cfg.resolve("recall", "linear", feature_map="identity", overrides=["normalize=rmsnorm"])
    assert c["model"]["feature_map"] == "identity"


def test_parse_value():
    assert cfg.parse_value("1e-3") == 0.001
    assert cfg.parse_value("true") is True
    assert cfg.parse_value("null") is None
    assert cfg.parse_value("elu1") == "elu1"


def test_every_task_preset_names_its_model_and_train_settings(monkeypatch):
    from evalsuite import tasks

    for name, cls in tasks.TASKS.items():
        for preset in cls.presets:
            assert cfg.preset_base(cls, preset) in cfg.PRESETS, (name, preset)
    recall = tasks.TASKS.get("recall")
    monkeypatch.setitem(recall.presets, "orphan", dict(seq_len=64))  # neither global nor in preset_bases
    with pytest.raises(cfg.ConfigError, match="preset 'orphan' names no model and train settings"):
        cfg.resolve("recall", "linear", preset="orphan")
