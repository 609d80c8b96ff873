"""One-off store repair (2026-12-06): the frontier's escalation sweeps listed RWKV-7 runs trained
before `decay_init` (uniform initial decays, no decay_init in their config). The frontier's points
now ask for RWKV-7's ramp, so those runs are not of its points; remove them from the frontier's
escalation listings (the runs themselves stay in the store)."""
import sqlite3
import sys

from evalsuite.store import Store

path = sys.argv[1]
store = Store(path)
stale = {r.run_id for r in store.runs() if r.config["model"]["name"] == "rwkv7" and "decay_init" not in r.config["model"]}
con = sqlite3.connect(path)
names = {sid: name for sid, name in con.execute("SELECT sweep_id, name FROM sweeps")}
frontier = [sid for sid, name in names.items() if name.startswith("reproduce-frontier-") and name.endswith("-escalation")]
removed = 0
for sid in frontier:
    for rid in stale:
        removed += con.execute("DELETE FROM sweep_runs WHERE sweep_id = ? AND run_id = ?", (sid, rid)).rowcount
con.commit()
print(f"{len(stale)} uniform-init RWKV-7 runs; {removed} listings removed from {len(frontier)} frontier escalation sweeps")
