"""CPUs for gunicorn's workers: affinity capped by the container's cgroup quota."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from app.runtime import available_cpus, cgroup_cpu_quota

AFFINITY = len(os.sched_getaffinity(0))


def _v2(tmp_path: Path, text: str) -> Path:
    (tmp_path / "cpu.max").write_text(text)
    return tmp_path


def _v1(tmp_path: Path, quota: str, period: str) -> Path:
    (tmp_path / "cpu").mkdir()
    (tmp_path / "cpu" / "cpu.cfs_quota_us").write_text(quota)
    (tmp_path / "cpu" / "cpu.cfs_period_us").write_text(period)
    return tmp_path


@pytest.mark.parametrize(("text", "quota"), [("max 100000\n", None), ("150000 100000\n", 1.5),
                                             ("50000 100000", 0.5), ("200000", 2.0)])
def test_cgroup_v2_quota_is_read_from_cpu_max(tmp_path, text, quota):
    assert cgroup_cpu_quota(_v2(tmp_path, text)) == quota


@pytest.mark.parametrize(("quota", "period", "cpus"), [("-1", "100000", None),
                                                       ("300000", "100000", 3.0)])
def test_cgroup_v1_quota_is_read_from_cfs_files(tmp_path, quota, period, cpus):
    assert cgroup_cpu_quota(_v1(tmp_path, quota, period)) == cpus


def test_no_cgroup_files_means_no_quota(tmp_path):
    assert cgroup_cpu_quota(tmp_path) is None
    assert available_cpus(tmp_path) == AFFINITY


def test_a_quota_caps_the_cpus_and_rounds_a_fraction_up_to_at_least_one(tmp_path):
    assert available_cpus(_v2(tmp_path, "50000 100000")) == 1
    (tmp_path / "cpu.max").write_text(f"{(AFFINITY + 8) * 100000} 100000")
    assert available_cpus(tmp_path) == AFFINITY


def test_a_garbled_file_is_no_quota(tmp_path):
    assert cgroup_cpu_quota(_v2(tmp_path, "lots\n")) is None
