"""The capacity-law section: the collapse plot and the table of pairs retrieved past d', with the
probe's reading beside it, from synthetic runs whose capacity is known."""
from evalsuite.reports import builder
from evalsuite.reports.sections import ReportData
from evalsuite.reports.sections.capacity_law import CapacityLaw
from tests.reproduce.synthetic import capacity_law, probes


def section(runs, probe_rows=None):
    data = ReportData(runs, builder.summarize(runs), __import__("pandas").DataFrame(), probe_rows)
    return CapacityLaw().build(data, "png")


def test_the_table_reads_each_maps_capacity_and_the_probes():
    rows = probes({"linear/elu1": 8, "linear/dpfp(nu=1)": 16}, grid=(4, 8, 12, 16, 24, 32))
    rows["d_key"] = 8
    s = section(capacity_law(), rows)
    table = {r["series"]: r for r in s["table"]}
    assert table["linear/elu1 d'=8"]["trained"] == 8.0 and table["linear/elu1 d'=8"]["probe"] == 8.0
    assert table["linear/dpfp(nu=1) d'=16"]["trained"] == 16.0 and table["linear/dpfp(nu=1) d'=16"]["ratio"] == 1.0
    assert table["linear/dpfp(nu=1) d'=8"]["probe"] is None  # no probe at d_key 4
    assert table["delta d'=8"]["trained"] == 12.0
    assert len(s["plots"]) == 2 and all(p["uri"].startswith("data:image/png") for p in s["plots"])
    assert "softmax" not in " ".join(table)  # no d': it keeps every pair


def test_no_section_without_a_sweep_of_d_across_d_prime():
    runs = [r for r in capacity_law() if r.config["task"]["num_kv_pairs"] in (4, 8)]
    assert section(runs) is None


def test_a_curve_is_one_setting_at_one_budget():
    """Another experiment's runs of the same map and d' at one D (linear-width's elu+1 at width 128,
    d' 8, 3 epochs, as the published store holds) join no curve: the elu+1 curve reads its own runs."""
    from tests.reproduce.synthetic import cell

    def as_stored(runs):  # the position table sized to the length, as a stored configuration has it
        return [r.model_copy(update={"config": {**r.config, "model": {**r.config["model"],
                                                                      "max_len": r.config["task"]["seq_len"]}}})
                for r in runs]

    other = cell("linear", 0.1, d_model=128, seq_len=64, pairs=16, feature_dim=8)
    s = section(as_stored(capacity_law() + other))
    table = {r["series"]: r for r in s["table"]}
    assert table["linear/elu1 d'=8"]["trained"] == 8.0
    assert not any("width 128" in name for name in table)  # one D: too few points to draw a curve
