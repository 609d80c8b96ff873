"""What a run records about the machine it ran on."""
import torch

from evalsuite import environment


def test_describe_names_the_cpu_and_its_kernel_path():
    env = environment.describe(torch.device("cpu"))
    assert env["cpu_capability"] == torch.backends.cpu.get_cpu_capability()
    assert env["threads"] == torch.get_num_threads() and env["device"] == "cpu"
    cpuinfo = open("/proc/cpuinfo").read() if __import__("os").path.exists("/proc/cpuinfo") else ""
    if "model name" in cpuinfo:  # Linux: the model name verbatim
        assert env["cpu"] and env["cpu"] in cpuinfo
