import pytest

from evalsuite.registry import Registry, UnknownName


def make():
    reg = Registry("widget")

    @reg.register("alpha")
    class Alpha:
        pass

    @reg.register("beta")
    class Beta:
        pass

    return reg, Alpha


def test_register_and_lookup():
    reg, Alpha = make()
    assert reg.names() == ["alpha", "beta"]
    assert reg.get("alpha") is Alpha
    assert "alpha" in reg and "gamma" not in reg


def test_typo_suggests_close_name():
    reg, _ = make()
    with pytest.raises(UnknownName, match=r"unknown widget 'alpah'. Did you mean 'alpha'\?") as info:
        reg.get("alpah")
    assert "Available: alpha, beta" in str(info.value)


def test_duplicate_name_is_refused():
    reg, _ = make()
    with pytest.raises(ValueError, match="already registered"):
        reg.register("alpha", obj=object())


def test_module_attr_reference():
    reg, _ = make()
    from collections import OrderedDict

    assert reg.get("collections:OrderedDict") is OrderedDict
    with pytest.raises(UnknownName, match="has no attribute"):
        reg.get("collections:Nope")
    with pytest.raises(UnknownName, match="cannot import module"):
        reg.get("no_such_module_xyz:Thing")


def test_file_reference(tmp_path):
    reg, _ = make()
    f = tmp_path / "plugin.py"
    f.write_text("class Thing:\n    value = 42\n")
    assert reg.get(f"{f}:Thing").value == 42
    with pytest.raises(UnknownName, match="defines no attribute"):
        reg.get(f"{f}:Other")
    with pytest.raises(UnknownName, match="does not exist"):
        reg.get(f"{tmp_path}/missing.py:Thing")


def test_builtin_registries_load_lazily():
    from evalsuite import models, tasks
    from evalsuite.models import feature_maps

    assert "recall" in tasks.names()
    assert {"softmax", "linear"} <= set(models.names())
    assert "elu1" in feature_maps.names()


def test_entry_point_plugins_are_loaded(monkeypatch):
    import evalsuite.registry as registry

    calls = []

    class FakeEP:
        name = "fake"

        def load(self):
            return lambda: calls.append("loaded")

    monkeypatch.setattr(registry, "_plugins_loaded", False)
    monkeypatch.setattr(registry, "entry_points", lambda group: [FakeEP()] if group == "evalsuite.plugins" else [])
    reg = Registry("widget")
    reg.names()
    reg.names()
    assert calls == ["loaded"]  # once per process
