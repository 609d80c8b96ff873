"""The capacity-under-argmax section: the probe's n* against d beside both laws, and trained
mixed-D models against D over the probe's n*, from synthetic runs and probe rows whose capacities
are known (``synthetic.capacity_trained``, ``synthetic.argmax_probes``)."""
import pandas as pd

from evalsuite.reports import builder
from evalsuite.reports.sections import ReportData
from evalsuite.reports.sections.capacity_argmax import CapacityArgmax, probe_table
from tests.reproduce.synthetic import argmax_probes, capacity_trained


def build(runs, probes):
    return CapacityArgmax().build(ReportData(runs, builder.summarize(runs), pd.DataFrame(), probes), "png")


def with_values(rows: pd.DataFrame) -> pd.DataFrame:
    return rows.assign(n_values=rows.n_keys.where(rows.n_keys % 2 == 0, rows.n_keys + 1))


def test_trained_models_are_read_against_the_probe_at_their_state():
    runs, probes = capacity_trained(world={("delta", 16, 16, 2): 28.0}, probe={("delta", 16, 16): 5.0})
    s = build(runs, probes)
    table = {(r["series"], r["epochs"]): r for r in s["trained"]}
    base = min(e for _, e in table)
    held = table["elu+1 (d_k 8, d_v 8), 2 layers", base]
    assert held["ratio"] == "1.00" and held["seeds"] == 3   # the synthetic probe holds what the models hold
    assert float(table["delta (d_k 16, d_v 16), 2 layers", base]["ratio"]) > 2  # about 21 read back at 0.9, the probe 5
    assert [p["name"] for p in s["plots"]] == ["against-d", "collapse"]
    assert all(p["uri"].startswith("data:image/png") for p in s["plots"])


def test_the_probe_table_takes_each_reported_seeds_last_budget():
    rows = with_values(argmax_probes())
    t = probe_table(rows)
    signed = t[(t.label == "signed linear") & (t.d_key == 16) & (t.d_value == 16)].iloc[0]
    assert signed.seeds == 3 and signed.lo < signed.n < signed.hi and signed.converged
    assert build([], rows)["plots"][0]["name"] == "against-d"  # probes alone: the log-log plot, no collapse


def test_no_section_without_probes_or_mixed_runs():
    assert build([], pd.DataFrame()) is None
