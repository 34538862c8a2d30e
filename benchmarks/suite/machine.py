"""The machine the benchmarks run on: its processor, the CPUs this process may use, its load."""

import os
import platform
import sys
from pathlib import Path

import numpy as np


def cpu_model():
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def usable_cpus():
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


def load_average():
    try:
        return ", ".join(f"{x:.1f}" for x in os.getloadavg())
    except OSError:
        return "unknown"


def print_machine():
    import numba

    print("beggar-env benchmarks")
    print(f"python   {platform.python_implementation()} {platform.python_version()} ({sys.executable})")
    print(f"platform {platform.platform()}")
    print(f"cpu      {cpu_model()}; {os.cpu_count()} CPUs, {usable_cpus()} usable")
    print(f"numba    {numba.__version__} ({numba.config.NUMBA_NUM_THREADS} threads); numpy {np.__version__}")
