"""Ray executor (the ``ray`` extra): plain Ray tasks, fractional GPUs.

``address`` joins a running cluster (``ray start --head`` elsewhere); without it a local Ray
instance is started with ``workers`` CPUs. Workers return results to the driver, the only process
that writes the SQLite store. Results and weights travel with the task's return value (a worker
may run on a machine that does not share the store's folder); the driver leaves each in its local
``incoming/`` journal (an absolute path), then records it."""
from __future__ import annotations

import logging
import sys
from pathlib import Path
from typing import Iterator

from evalsuite.config import RunConfig
from evalsuite.errors import UserError
from evalsuite.records import RunRecord

from evalsuite.persist import journal

from .base import failed_result, run_unit_in_worker, uses_plugin
from .grouping import plan


REACH_TIMEOUT_S = 5.0


def reachable(address: str, timeout: float = REACH_TIMEOUT_S) -> None:
    """``UserError`` unless ``host:port`` (or ``ray://host:port``) accepts a connection within
    ``timeout``: checked before any point is claimed, so an unreachable cluster marks nothing running."""
    import socket

    target = address.split("://", 1)[-1]
    host, _, port = target.rpartition(":")
    if not host or not port.isdigit():
        raise UserError(f"--address: {address!r} is not host:port (or ray://host:port, or auto)")
    try:
        socket.create_connection((host, int(port)), timeout=timeout).close()
    except OSError as exc:
        raise UserError(f"--address {address}: cannot reach it within {timeout:g} s ({exc.strerror or exc}); "
                        f"start the cluster (`ray start --head`) or check the address") from None


def keep_errors_in(path: Path):
    """Route what Ray's driver prints of cluster errors (a node lost, a task retried: tens of lines
    each, on stdout, even with ``log_to_driver=False``) into ``path``, said once on stderr; returns
    the function that undoes it. Ray has no switch for this: its error listener calls the module's
    ``print_to_stdstream``, which is replaced while the sweep runs (left alone if Ray renames it)."""
    from ray._private import worker

    original = getattr(worker, "print_to_stdstream", None)
    if original is None:
        return lambda: None
    said = []

    def to_file(data, ignore_prefix=False, **_):
        try:
            with open(path, "a") as f:
                f.write("".join(f"({data.get('pid')}) {line}\n" for line in data.get("lines", [])))
        except OSError:
            return original(data, ignore_prefix=ignore_prefix)
        if not said:
            said.append(True)
            print(f"ray: the cluster reported a problem (a lost node's tasks are retried elsewhere); Ray's messages "
                  f"are in {path}", file=sys.stderr)

    worker.print_to_stdstream = to_file
    return lambda: setattr(worker, "print_to_stdstream", original)


class RayExecutor:
    def __init__(self, workers: int | None = None, device: str = "auto", address: str | None = None,
                 gpu_fraction: float = 0.25, threads: int | None = None, group: str = "auto"):
        import importlib.util

        if importlib.util.find_spec("ray") is None:
            raise UserError("--executor ray needs Ray: pip install 'evalsuite[ray]'")
        if address and address != "auto":
            reachable(address)
        self.workers, self.device, self.address, self.gpu_fraction = workers, device, address, gpu_fraction
        self.threads, self.group = threads or 1, group
        self.started_here = False

    def connect(self) -> None:
        """Join the cluster (or start a local instance) before any point is claimed, so a signal or
        an error while connecting leaves nothing ``running``. ``ray.init`` blocks in native code
        for half a minute when the address answers but is not Ray; it runs in a thread while this
        one waits in short steps, so SIGTERM and Ctrl-C still end the command at once."""
        import threading

        import ray

        if ray.is_initialized():
            return
        quiet = dict(log_to_driver=False, logging_level=logging.ERROR)
        outcome: dict = {}

        def init():
            try:
                if self.address:
                    outcome["context"] = ray.init(address=self.address, **quiet)
                else:
                    outcome["context"] = ray.init(num_cpus=self.workers * self.threads if self.workers else None,
                                                  include_dashboard=False, **quiet)
            except BaseException as exc:  # noqa: BLE001 - handed to the waiting thread
                outcome["error"] = exc

        thread = threading.Thread(target=init, name="evalsuite-ray-connect", daemon=True)
        thread.start()
        while thread.is_alive():
            thread.join(0.1)  # signals are handled here, between waits
        if "error" in outcome:
            exc = outcome["error"]
            where = f"--address {self.address}" if self.address else "a local Ray instance"
            raise UserError(f"{where}: Ray could not connect ({type(exc).__name__}: {str(exc).splitlines()[0][:300]})") \
                from None
        self.started_here = True
        session = (getattr(outcome["context"], "address_info", None) or {}).get("session_dir")
        if session:
            print(f"ray: its own logs are in {session}/logs", file=sys.stderr)

    def run(self, configs: list[RunConfig], incoming: Path) -> Iterator[RunRecord]:
        import ray

        self.connect()  # the sweep connects before it claims; a direct caller connects here
        restore = keep_errors_in(Path(incoming).resolve().parent / "ray-errors.log")
        try:
            gpus = ray.cluster_resources().get("GPU", 0) if self.device != "cpu" else 0
            resources = dict(num_cpus=self.threads, num_gpus=self.gpu_fraction if gpus else 0)
            task = ray.remote(**resources)(run_unit_in_worker)
            # a unit that loads user code runs in a worker that is never reused (``base.uses_plugin``);
            # Ray's tasks share the fate of their owner, the driver: they end when it does
            isolated = ray.remote(max_calls=1, **resources)(run_unit_in_worker)
            device = "cuda" if gpus else "cpu"
            slots = self.workers or max(1, int(ray.cluster_resources().get("CPU", 1) // self.threads))
            units = [[configs[i] for i in u] for u in plan(configs, self.group, slots=slots, cuda=bool(gpus))]
            incoming = Path(incoming).resolve()
            refs = {(isolated if any(uses_plugin(c) for c in unit) else task).remote(
                        unit, device, self.threads, None, self.group == "auto"): unit for unit in units}
            while refs:
                ready, _ = ray.wait(list(refs), num_returns=1)
                for ref in ready:
                    unit = refs.pop(ref)
                    try:
                        records = ray.get(ref)
                    except Exception as exc:  # noqa: BLE001 - a worker crash fails its runs
                        records = [failed_result(config, f"ray task failed: {type(exc).__name__}: {exc}") for config in unit]
                    for record in records:
                        try:
                            journal(record, incoming)
                        except OSError:
                            pass  # the record is still persisted; only the crash copy is missing
                        yield record
        finally:
            restore()
            if self.started_here:
                ray.shutdown()
                self.started_here = False
