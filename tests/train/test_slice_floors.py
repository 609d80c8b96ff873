"""Each test slice carries its own floor: the best no-memory reader on that slice's examples
(``tasks.readers.floor`` applied to the subset, computed here independently)."""
import torch

from evalsuite.resolve import resolve
from evalsuite.tasks import readers
from evalsuite.train import make_data, train_one


def test_every_slice_floor_is_the_readers_floor_on_its_own_examples():
    config = resolve("copy", "softmax", preset="tiny", overrides={"train.epochs": 0.25}, seed=0)
    record = train_one(config, torch.device("cpu"), progress=False).record
    slices = [s for s in record.metrics["slices"] if s["split"] == "test"]
    assert len(slices) > 1
    data, _ = make_data(config.task, config.train, config.seed)
    task = config.task.tasks[0]
    test = data["test"]
    for s in slices:
        pick = (test.meta["length"] == s["length"]).nonzero()[:, 0]
        assert abs(s["floor"] - readers.floor(task, test[pick], data["train"])[0]) < 1e-12
    assert min(s["floor"] for s in slices) <= record.metrics["floor"] <= max(s["floor"] for s in slices) + 1e-12
