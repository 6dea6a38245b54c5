"""What the process may use of the machine: CPUs by affinity and by the cgroup's quota.

A container limited to 2 CPUs on a 64-core host sees 64 cores in ``os.cpu_count()``;
sizing gunicorn from that would start 129 workers, each with its own connection pool.
"""

from __future__ import annotations

import math
import os
from pathlib import Path

CGROUP = Path("/sys/fs/cgroup")


def available_cpus(cgroup: Path = CGROUP) -> int:
    """Return how many CPUs this process may keep busy: affinity, capped by a CPU quota."""
    try:
        cpus = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        cpus = os.cpu_count() or 1
    quota = cgroup_cpu_quota(cgroup)
    return max(1, min(cpus, math.ceil(quota))) if quota is not None else max(1, cpus)


def cgroup_cpu_quota(cgroup: Path = CGROUP) -> float | None:
    """Return the cgroup's CPU quota in CPUs (v2 ``cpu.max``, else v1), None when unlimited."""
    try:
        quota, _, period = (cgroup / "cpu.max").read_text().strip().partition(" ")
        if quota == "max":
            return None
        return int(quota) / int(period or "100000")
    except (OSError, ValueError):
        pass
    try:
        quota_us = int((cgroup / "cpu" / "cpu.cfs_quota_us").read_text())
        period_us = int((cgroup / "cpu" / "cpu.cfs_period_us").read_text())
    except (OSError, ValueError):
        return None
    return None if quota_us <= 0 or period_us <= 0 else quota_us / period_us
