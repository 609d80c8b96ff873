"""The CUDA paths, run by ``benchmarks/gpu_check.sh`` on a machine with a GPU. Without CUDA these
tests are skipped (CI has no GPU); README says which GPU figures were measured and when."""
import pytest
import torch

import evalsuite
from evalsuite.models import ops
from evalsuite.models.decayed import decayed_attention
from evalsuite.models.swa import sliding_window_attention
from evalsuite.resolve import resolve
from evalsuite.train import Graded, autocast_for, make_optimizer, train_step

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA (benchmarks/gpu_check.sh runs it)")
CUDA = torch.device("cuda")


def unit(x):
    return torch.nn.functional.normalize(x, dim=-1)


@pytest.mark.parametrize("T", [63, 200])
def test_kernels_match_the_cpu(T):
    torch.manual_seed(0)
    q, k, v = (torch.randn(2, 2, T, 16) for _ in range(3))
    beta, log_g = torch.rand(2, 2, T), -torch.rand(2, 2, T, 16) / 8
    cases = {
        "linear": lambda q, k, v: ops.linear_attention(q, k, v),
        "delta": lambda q, k, v: ops.delta_rule(unit(q), unit(k), v, beta.to(q.device)),
        "decayed": lambda q, k, v: decayed_attention(q, k, v, log_g.to(q.device)),
        "swa": lambda q, k, v: sliding_window_attention(q, k, v, 16),
    }
    for name, f in cases.items():
        torch.testing.assert_close(f(q.cuda(), k.cuda(), v.cuda()).cpu(), f(q, k, v), rtol=2e-4, atol=2e-4, msg=name)


def test_states_stay_float32_under_bf16_autocast():
    q, k, v = (torch.randn(1, 2, 70, 16, device=CUDA) for _ in range(3))
    with torch.autocast("cuda", dtype=torch.bfloat16):
        _, state = ops.delta_rule(unit(q), unit(k), v, torch.rand(1, 2, 70, device=CUDA), return_state=True)
    assert state.dtype == torch.float32


@pytest.mark.parametrize("model", ["softmax", "linear", "delta", "gla", "swa", "based"])
def test_training_steps_never_sync_with_the_host(model):
    """CUDA's sync debug mode raises on any host sync inside the training step."""
    config = resolve("recall", model, preset="tiny")
    net = config.model.build(config.task.vocab_size).to(CUDA)
    opt = make_optimizer(net, config.train, CUDA)
    batch = Graded.of(config.task.train_tasks[0].generate(16, 0)).to(CUDA)
    autocast = autocast_for(CUDA, "auto")
    train_step(net, opt, batch, 1.0, autocast)  # first step: lazy initialisation may sync
    torch.cuda.synchronize()
    torch.cuda.set_sync_debug_mode("error")
    try:
        for _ in range(3):
            train_step(net, opt, batch, 1.0, autocast)
    finally:
        torch.cuda.set_sync_debug_mode("default")


def test_a_run_on_cuda_matches_its_record():
    record = evalsuite.run("recall", "delta", preset="tiny", device="cuda", store=False)
    assert record.status == "done" and record.env["device"].startswith("cuda")


def test_a_group_on_cuda_matches_its_members_trained_alone():
    """Grouped training's reason to exist is the GPU: the same equivalence as on CPU
    (tests/train/test_group.py), in fp32 so that rounding stays at float32's."""
    from evalsuite.train import train_group, train_one

    configs = [resolve("recall", "delta", preset="tiny", seed=s,
                           overrides={"train.lr": lr, "train.epochs": 4, "train.eval_every": 8, "train.precision": "fp32"})
               for lr in (1e-3, 3e-3) for s in (0, 1)]
    grouped = train_group(configs, CUDA)
    for c, g in zip(configs, grouped):
        alone = train_one(c, CUDA)
        assert g.record.status == alone.record.status == "done"
        assert g.record.metrics["steps"] == alone.record.metrics["steps"]
        for hg, ha in zip(g.record.history, alone.record.history):
            assert hg["train_loss"] == pytest.approx(ha["train_loss"], rel=1e-3, abs=1e-4)


def test_a_grouped_step_never_syncs_with_the_host():
    """Between evaluations a group's steps (stacking, the vmapped loss, each member's optimizer)
    never wait for the GPU."""
    from evalsuite.train import TrainingState
    from evalsuite.train.group import _train_together

    configs = [resolve("recall", "linear", preset="tiny", seed=s, overrides={"train.lr": lr, "train.eval_every": 1000})
               for lr in (1e-3, 3e-3) for s in (0, 1)]
    members = [TrainingState(c, CUDA) for c in configs]
    for m in members:
        m.prepare()
        m.total_steps = 4  # evaluation (a sync, by design) only after the fourth step

    class Bar:
        def update(self, n):
            if members[0].step == 1:  # after the first grouped step (lazy initialisation may sync)
                torch.cuda.synchronize()
                torch.cuda.set_sync_debug_mode("error")
            if members[0].step == 3:
                torch.cuda.set_sync_debug_mode("default")

    try:
        _train_together(members, Bar())
    finally:
        torch.cuda.set_sync_debug_mode("default")
    assert all(m.status == "done" for m in members)


@pytest.mark.parametrize("memory", ["linear", "delta"])
def test_the_argmax_probe_and_its_calibration_run_on_cuda(memory):
    """The same batches (drawn on the CPU) on either device: the trained probe's capacity within a
    pair of the CPU's, and the calibration's exactly (no training, the same Gaussian pairs)."""
    from evalsuite.analysis.argmax_probe import calibration, trained_argmax_probe

    kw = dict(steps=200, max_steps=400, n_keys=32, n_values=32, seed=0)
    cpu = trained_argmax_probe(memory, 8, 8, [1, 2, 4, 8], **kw)
    gpu = trained_argmax_probe(memory, 8, 8, [1, 2, 4, 8], device="cuda", **kw)
    assert abs(cpu.capacity.iloc[-1] - gpu.capacity.iloc[-1]) <= 1.0
    a, b = calibration(16, 16, [4, 16]), calibration(16, 16, [4, 16], device="cuda")
    assert (a.accuracy - b.accuracy).abs().max() < 0.01
