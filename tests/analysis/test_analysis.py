"""Analysis against closed forms: orthogonal keys, one-hot and uniform rows, separable memories."""
import math

import pandas as pd
import pytest
import torch

import evalsuite
from evalsuite import analysis, models, tasks
from evalsuite.resolve import resolve
from evalsuite.tasks import IGNORE


def test_orthogonal_keys_give_zero_crosstalk_and_full_rank():
    keys = torch.eye(6)[:4] * 3.0                       # orthogonal feature-mapped keys
    values = torch.randn(4, 5)
    for i in range(4):
        weights = keys @ keys[i]                        # linear attention's row for query = key i
        assert analysis.crosstalk(weights, values, i) == pytest.approx(0.0, abs=1e-12)
    stats = analysis.coherence(keys)
    assert stats["coherence_max"] == pytest.approx(0.0) and stats["effective_rank"] == pytest.approx(4.0)
    parallel = analysis.coherence(torch.ones(3, 4))
    assert parallel["coherence_max"] == pytest.approx(1.0) and parallel["effective_rank"] == pytest.approx(1.0, abs=1e-6)


def test_crosstalk_closed_form():
    weights, values = torch.tensor([0.5, 0.25, 0.25]), torch.tensor([[1.0, 0.0], [0.0, 1.0], [0.0, 1.0]])
    assert analysis.crosstalk(weights, values, 0) == pytest.approx(1.0)  # |(0, .5)| / |(.5, 0)|


def test_row_stats_one_hot_and_uniform():
    one_hot = torch.tensor([[0.0, 0.0, 1.0, 0.0]])
    s = analysis.row_stats(one_hot, torch.tensor([2]), top_k=2)
    assert float(s["entropy"]) == pytest.approx(0.0, abs=1e-12)
    assert float(s["answer_mass"]) == 1.0 and float(s["max_weight"]) == 1.0
    uniform = torch.full((1, 8), 1 / 8)
    s = analysis.row_stats(uniform, torch.tensor([3]), top_k=2)
    assert float(s["entropy"]) == pytest.approx(math.log(8))
    assert float(s["answer_mass"]) == pytest.approx(1 / 8) and float(s["topk_mass"]) == pytest.approx(0.25)
    assert math.isnan(float(analysis.row_stats(uniform, torch.tensor([-1]))["answer_mass"]))


def test_analytic_probe_softmax_retrieves_every_pair_and_linear_saturates():
    soft = analysis.capacity_probe("softmax", d_key=16, pairs=[4, 16, 64])
    assert (soft.accuracy == 1.0).all()
    assert analysis.knee(soft) == 64
    lin = analysis.capacity_probe("linear", feature_map="elu1", d_key=16, pairs=[2, 64])
    assert lin.accuracy.iloc[0] > lin.accuracy.iloc[1]
    delta = analysis.capacity_probe("delta", d_key=16, pairs=[2, 64])
    assert (delta.accuracy > lin.accuracy).all()   # error-correcting writes beat elu+1's flat, summed memory
    assert list(soft.columns[:6]) == ["memory", "kind", "feature_map", "d_key", "pairs", "accuracy"]


def test_knee_and_half_point():
    df = pd.DataFrame({"pairs": [4, 8, 16, 32, 64], "accuracy": [1.0, 0.995, 0.9, 0.4, 0.1]})
    assert analysis.knee(df) == 8
    assert analysis.knee(df, threshold=0.85) == 16
    assert analysis.half_point(df) == pytest.approx(math.exp(math.log(16) + 0.8 * math.log(2)))
    assert analysis.half_point(df.assign(accuracy=1.0)) == math.inf
    assert analysis.knee(df.assign(accuracy=0.5)) == 0


def test_answer_positions_and_error_classes():
    inputs = torch.tensor([[5, 7, 6, 8, 5, 6]])
    targets = torch.full_like(inputs, IGNORE)
    targets[0, 4], targets[0, 5] = 7, 8                   # MQAR: key 5 -> 7, key 6 -> 8
    assert analysis.answer_positions(inputs, targets).tolist() == [[-1, -1, -1, -1, 1, 3]]
    predictions = torch.tensor([[0, 0, 0, 0, 8, 9]])      # 8: the other pair's value; 9: not a value
    assert analysis.classify_errors(inputs, targets, predictions) == {"correct": 0, "other_value": 1, "not_a_value": 1}
    assert analysis.classify_errors(inputs, targets, targets.clamp_min(0))["correct"] == 2


@pytest.mark.parametrize("name,opts", [("softmax", {}), ("linear", {}), ("delta", {}), ("hybrid", {"pattern": "LS"}),
                                      ("deltaproduct", {"householder": 3})])
def test_summary_covers_every_layer_and_head(name, opts):
    from evalsuite import tasks

    torch.manual_seed(0)
    batch = tasks.get("recall", vocab_size=32, seq_len=32, num_kv_pairs=4).generate(20, 0)
    model = models.build(name, vocab_size=32, d_model=16, n_layers=2, n_heads=2, max_len=32, **opts)
    out = analysis.summary(model, batch.inputs, batch.targets)
    assert out["examples"] == 20 and sum(out["errors"].values()) == 20 * 4
    assert {(r["layer"], r["head"]) for r in out["sharpness"]} == {(0, 0), (0, 1), (1, 0), (1, 1)}
    for row in out["sharpness"]:
        assert 0 <= row["answer_mass"] <= 1 and 0 <= row["norm_entropy"] <= 1 + 1e-6
    assert {r["layer"] for r in out["interference"]} == {0, 1}
    for row in out["interference"]:  # both spaces, each beside random keys sent through the same map
        assert {"raw_coherence_mean", "random_coherence_mean", "random_raw_coherence_mean", "random_effective_rank"} <= set(row)
    ex = out["example"]  # the report draws its Gram matrix labelled by key_positions (a key per write)
    assert len(ex["gram"]) == len(ex["key_positions"]) and len(ex["weights"]) == ex["query_position"] + 1


def test_random_keys_through_elu1_are_coherent_but_raw_random_keys_are_not():
    """The map's geometry alone: 8 random Gaussian keys of size 64 have mean |cosine| ~0.1 raw and
    far more after elu+1 (all-positive features), which is why coherence is compared with random."""
    from evalsuite.analysis.interference import random_coherence
    from evalsuite.models import feature_maps

    elu = random_coherence(8, 64, feature_maps.get("elu1", 64).forward_key)
    assert elu["random_raw_coherence_mean"] < 0.15
    assert elu["random_coherence_mean"] > 0.5
    # brute force: the same statistic by a plain loop over pairs, float64
    gen = torch.Generator().manual_seed(0)
    keys = torch.randn(16, 8, 64, generator=gen)
    phi = torch.nn.functional.elu(keys.double()) + 1
    cos = []
    for d in range(16):
        for i in range(8):
            for j in range(8):
                if i != j:
                    a, b = phi[d, i], phi[d, j]
                    cos.append(float(abs(a @ b) / (a.norm() * b.norm())))
    assert elu["random_coherence_mean"] == pytest.approx(sum(cos) / len(cos), rel=1e-5)


def test_state_size_in_bytes():
    model = models.build("linear", vocab_size=20, d_model=16, n_layers=1, n_heads=2, max_len=8, conv_kernel=0)
    assert analysis.state_size(model, 8) == {"floats": 2 * (8 * 8 + 8), "bytes": 4 * 2 * (8 * 8 + 8)}
    assert analysis.state_size(model, 8, "bf16")["bytes"] == 2 * 2 * (8 * 8 + 8)
    with pytest.raises(ValueError, match="dtype must be one of"):
        analysis.state_size(model, 8, "int3")


def test_trained_probe_small_memory_saturates_and_softmax_does_not():
    """d_key 8: elu+1's 8 features cannot hold 16 keys; softmax (one row per key) can."""
    lin = analysis.capacity_probe("linear", feature_map="elu1", d_key=8, pairs=[2, 16], trained=True, steps=600)
    soft = analysis.capacity_probe("softmax", d_key=8, pairs=[2, 16], trained=True, steps=600)
    assert lin.accuracy.iloc[0] >= 0.99 and lin.accuracy.iloc[1] < 0.9
    assert (soft.accuracy >= 0.99).all()
    assert analysis.knee(lin) == 2 and analysis.knee(soft) == 16


def test_schlag_probe_follows_the_paper_and_the_tied_variant_remains():
    from evalsuite.analysis.capacity import SchlagProbe, _schlag_batch

    probe = SchlagProbe("linear", 16, S=8)
    assert probe.query_proj is not probe.key_proj                      # its own query projection
    assert probe.key_proj.in_features == 8 + int(2 * 8 * 1.1)           # [value one-hot; key embedding]
    gen = torch.Generator().manual_seed(0)
    keys, values, queries, answer, present = _schlag_batch(5, 8, 1, gen, "cpu", all_queries=True)
    assert (keys.sort(1).values == torch.arange(8)).all() and present.all()   # setting 1: every key once
    # the answer is the value written next to the queried key (brute force)
    for b in range(5):
        for r in range(8):
            j = int((keys[b] == queries[b, r]).nonzero()[-1])
            assert int(values[b, j]) - 8 == int(answer[b, r])
    keys2, values2, queries2, answer2, _ = _schlag_batch(50, 4, 2, gen, "cpu")
    assert keys2.shape[1] == 8  # setting 2: 2S writes with replacement, the latest value counts
    for b in range(50):
        j = int((keys2[b] == queries2[b, 0]).nonzero()[-1])
        assert int(values2[b, j]) - 4 == int(answer2[b, 0])
    df = analysis.capacity_probe("linear", d_key=8, pairs=[2], trained=True, steps=200)
    assert df.variant.iloc[0] == "schlag" and df.max_steps.iloc[0] == 200
    tied = analysis.capacity_probe("linear", d_key=8, pairs=[2], trained=True, steps=200, variant="tied")
    assert tied.variant.iloc[0] == "tied"


def test_the_d_prime_law_is_the_squared_errors_the_cross_entropy_probe_passes_it():
    """The same probe, memory and budget (elu+1 at d_key 4, 16 pairs, 3,000 steps): the paper's
    squared error retrieves about d' = 4 pairs; cross-entropy through a learned temperature, which
    asks only that each query score its own key highest, retrieves at least 2 d'."""
    squared = analysis.capacity_probe("linear", d_key=4, pairs=[16], trained=True, steps=3000)
    ce = analysis.capacity_probe("linear", d_key=4, pairs=[16], trained=True, steps=3000, variant="schlag-ce")
    assert ce.variant.iloc[0] == "schlag-ce"
    assert squared.accuracy.iloc[0] * 16 <= 1.25 * 4
    assert ce.accuracy.iloc[0] * 16 >= 2 * 4


def test_a_small_value_side_binds_under_cross_entropy():
    """The same cross-entropy probe (elu+1 at d_key 4, 16 pairs, 1,500 steps) with the paper's
    one-hot values (d_v = S = 16) and with values as codes of size 2: the state's value side counts
    (5.2 of 16 pairs against 2.1 here)."""
    one_hot = analysis.capacity_probe("linear", d_key=4, pairs=[16], trained=True, steps=1500, variant="schlag-ce")
    small = analysis.capacity_probe("linear", d_key=4, pairs=[16], trained=True, steps=1500, variant="schlag-ce",
                                    d_value=2)
    assert small.accuracy.iloc[0] < one_hot.accuracy.iloc[0] - 0.1
    assert small.d_value.iloc[0] == 2 and small.state_floats.iloc[0] < one_hot.state_floats.iloc[0]
    assert "d_value" not in one_hot  # the paper's one-hot values are stored as they were


def test_probe_curves_never_pool_value_sides():
    from evalsuite.analysis.capacity import probe_curves

    rows = pd.DataFrame([{"memory": "linear/elu1", "pairs": 8, "accuracy": a, "trained": True, "setting": 1, "d_key": 8,
                          "variant": "schlag", "seed": 0, "steps": 100, "max_steps": 100, "d_value": dv}
                         for a, dv in ((1.0, None), (0.25, 2))])
    assert probe_curves(rows, 8)["linear/elu1"].accuracy.tolist() == [1.0]
    assert probe_curves(rows, 8, d_value=2)["linear/elu1"].accuracy.tolist() == [0.25]
    assert probe_curves(rows.drop(columns="d_value"), 8, d_value=2) == {}


def test_trained_probe_setting2_latest_value_wins_for_delta():
    """Keys recur: summing (linear) mixes a key's old and new values; the delta rule overwrites."""
    delta = analysis.capacity_probe("delta", d_key=8, pairs=[4], trained=True, setting=2, steps=1500)
    lin = analysis.capacity_probe("linear", feature_map="dpfp", d_key=8, pairs=[4], trained=True, setting=2, steps=1500)
    assert delta.accuracy.iloc[0] > lin.accuracy.iloc[0] + 0.1, (delta.accuracy.iloc[0], lin.accuracy.iloc[0])


def test_run_records_analysis_and_weights_and_cli_analyzes_them(store_path):
    import evalsuite
    from click.testing import CliRunner
    from evalsuite.cli import main
    from evalsuite.store import Store

    result = evalsuite.run("recall", "linear", preset="tiny", store=store_path)
    assert result.status == "done"
    summary = result.metrics["analysis"]
    assert summary["sharpness"] and summary["interference"] and "errors" in summary
    assert Store(store_path).weights_path(result.run_id).exists()
    runner = CliRunner()
    for what in ("sharpness", "interference"):
        out = runner.invoke(main, ["analyze", what, "--run", result.run_id[:6], "--store", str(store_path)])
        assert out.exit_code == 0, out.output
        assert "LinearAttention" in out.output
    bad = runner.invoke(main, ["analyze", "sharpness", "--run", "nope", "--store", str(store_path)])
    assert bad.exit_code == 2 and "matches no run" in bad.output
    cap = runner.invoke(main, ["analyze", "capacity", "--memory", "linear", "--feature-map", "dpfp", "--option", "nu=2",
                               "--pairs", "4,64"])
    assert cap.exit_code == 0 and "knee" in cap.output and "dpfp(nu=2)" in cap.output
    bad = runner.invoke(main, ["analyze", "capacity", "--feature-map", "dpfp", "--option", "nu=0"])
    assert bad.exit_code == 2 and "nu must be" in bad.output
    top1 = runner.invoke(main, ["analyze", "capacity", "--trained", "--variant", "argmax", "--d-key", "4", "--d-value", "4",
                                "--pairs", "1,2,4", "--steps", "50"])
    assert top1.exit_code == 0 and "capacity (pairs read back at >= 0.9 each)" in top1.output, top1.output
    for args, says in ((["--variant", "argmax"], "add --trained"), (["--trained", "--variant", "argmax", "--setting", "2"],
                                                                    "--setting"), (["--d-value", "0"], "--d-value")):
        bad = runner.invoke(main, ["analyze", "capacity", *args])
        assert bad.exit_code == 2 and says in bad.output, bad.output


def test_probe_rows_are_keyed_by_every_setting(store_path):
    from evalsuite.store import Store

    store = Store(store_path)
    short = analysis.capacity_probe("linear", d_key=8, pairs=[2], trained=True, steps=100)
    longer = analysis.capacity_probe("linear", d_key=8, pairs=[2], trained=True, steps=200)
    store.add_probes(short)
    store.add_probes(longer)  # another budget: added beside, not over, the first
    assert sorted(store.probes().max_steps) == [100, 200]
    store.add_probes(longer)  # the same settings again replace their own row
    assert len(store.probes()) == 2


# ---- run analyses: the registry and the worked example (state rank) ----------------------------

def test_effective_rank_closed_forms():
    from evalsuite.analysis.state_rank import effective_rank

    assert effective_rank(torch.eye(5)) == pytest.approx(5.0)
    assert effective_rank(torch.outer(torch.arange(1.0, 5.0), torch.ones(3))) == pytest.approx(1.0)
    assert effective_rank(torch.zeros(4, 4)) == 0.0
    # two singular values 3 and 1: exp(-(3/4 log 3/4 + 1/4 log 1/4))
    expected = math.exp(-(0.75 * math.log(0.75) + 0.25 * math.log(0.25)))
    assert effective_rank(torch.diag(torch.tensor([3.0, 1.0]))) == pytest.approx(expected)


def test_memory_matrix_reads_each_kind_of_state():
    from evalsuite.analysis.state_rank import memory_matrix

    cache = torch.randn(2, 3, 4, 10, 8)  # [k/v, B, H, max_len, d]
    assert torch.equal(memory_matrix({"cache": cache, "length": 6}), cache[0][:, :, :6])
    S = torch.randn(3, 4, 8, 9)
    assert memory_matrix(S) is S and memory_matrix((S, torch.zeros(3, 4, 8))) is S
    assert memory_matrix(None) is None


def test_every_run_records_its_state_rank():
    for model in ("softmax", "linear", "delta"):
        rows = evalsuite.run("recall", model, preset="tiny", store=False).metrics["analysis"]["state_rank"]
        assert [r["layer"] for r in rows] == [0, 1]
        assert all(0 < r["effective_rank"] <= r["max_rank"] + 1e-6 for r in rows), rows


def test_a_registered_analysis_joins_every_summary():
    from evalsuite.analysis import RUN_ANALYSES, run_analysis, summary

    @run_analysis("graded_count")
    def graded_count(inp):
        return {"graded_count": int((inp.targets != -100).sum())}

    try:
        task = tasks.get("recall", vocab_size=32, seq_len=16, num_kv_pairs=2)
        batch = task.generate(4, 0)
        config = resolve("recall", "softmax", preset="tiny", overrides={"task.vocab_size": 32, "task.seq_len": 16,
                                                                             "task.num_kv_pairs": 2})
        out = summary(config.model.build(32), batch.inputs, batch.targets, answers=batch.answers)
        assert out["graded_count"] == int(batch.score_mask.sum())
        assert {"errors", "sharpness", "interference", "state_rank"} <= set(out)
    finally:
        RUN_ANALYSES.unregister("graded_count")


def test_long_sequences_are_analysed_on_fewer_examples(monkeypatch):
    """The shared pass keeps T x T views of every layer: at T = 8,192 a run with the default 256
    analysed examples held 14 GB for only 16 of them (measured), so the count follows a byte budget."""
    import evalsuite
    from evalsuite.analysis import runs

    assert runs.analysis_examples(64, 2) == 256
    assert runs.analysis_examples(8192, 2) == 2 and runs.analysis_examples(65536, 2) == 1
    assert runs.analysis_examples(2048, 2) == 2**30 // (4 * 2048 * 2048 * 2) == 32
    monkeypatch.setattr(runs, "ANALYSIS_BYTES", 4 * 32 * 32 * 2 * 5)  # room for 5 examples at T 32
    record = evalsuite.run("recall", "linear", preset="tiny", store=False)
    assert record.metrics["analysis"]["examples"] == 5


def test_a_probe_given_more_steps_is_not_stopped_by_patience_before_them():
    """``min_steps``: the 4x-steps rerun of a failing S trains every step it was given (only the
    loss target may stop it earlier): the capacity-knee issue's probe stopped on patience instead."""
    from evalsuite.analysis.capacity import schlag_probe

    row = schlag_probe("linear", 4, [24], feature_map="elu1", steps=1200, min_steps=1200, batch_size=4,
                       test_sequences=4).iloc[0]
    assert row.steps == 1200 or row.loss <= 0.001


def test_a_probe_memorys_d_prime_is_its_feature_maps_output_size():
    """d' of each probe memory, from the map's own out_dim: elu+1 d_key, DPFP 2 nu d_key, Performer
    2 x its random features, the delta rule d_key, softmax none; and a probe row carries it."""
    from evalsuite.analysis.capacity import capacity_probe, memory_feature_dim

    assert memory_feature_dim("linear", 8, "elu1") == 8 and memory_feature_dim("linear", 4, "dpfp", {"nu": 1}) == 8
    assert memory_feature_dim("linear", 8, "dpfp", {"nu": 3}) == 48
    assert memory_feature_dim("linear", 8, "performer", {"n_features": 4}) == 8
    assert memory_feature_dim("delta", 8) == 8 and memory_feature_dim("softmax", 8) is None
    rows = capacity_probe("linear", "performer", d_key=8, pairs=[4], trained=True, steps=100,
                          feature_map_options={"n_features": 8})
    assert rows.feature_dim.tolist() == [16]


def test_probe_capacities_read_the_longest_budget_at_each_rows_d_prime():
    """``probe_capacities``: pairs retrieved past d' from the curve at the longest step budget (a
    4x-steps rerun replaces the first), keyed by the stored d' (a Performer row at d_key 8 with 16
    features is d' 16, which its label alone would not say); old rows without ``feature_dim`` read
    d' from the label."""
    import pandas as pd

    from evalsuite.analysis.capacity import probe_capacities

    def rows(memory, d_key, accs, steps, feature_dim=None):
        return [{"memory": memory, "d_key": d_key, "pairs": s, "accuracy": a, "trained": True, "setting": 1,
                 "variant": "schlag", "seed": seed, "steps": steps, "max_steps": steps,
                 **({"feature_dim": feature_dim} if feature_dim else {})} for s, a in accs.items() for seed in (0, 1)]

    probes = pd.DataFrame(rows("linear/elu1", 8, {4: 1.0, 16: 0.25, 32: 0.125}, 4000)
                          + rows("linear/elu1", 8, {4: 1.0, 16: 0.5, 32: 0.25}, 16000)
                          + rows("linear/performer(n_features=8)", 8, {8: 1.0, 32: 0.5}, 4000, feature_dim=16))
    got = probe_capacities(probes)
    assert got == {("linear/elu1", 8): 8.0, ("linear/performer(n_features=8)", 16): 16.0}
