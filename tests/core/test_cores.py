"""Available cores: affinity mask and cgroup quota, never more than the host has, at least 1."""

from __future__ import annotations

import os

import pytest

from ltrfeat.core import cores


@pytest.mark.parametrize(
    "text, expected",
    [
        ("max 100000", None),
        ("200000 100000", 2),
        ("150000 100000", 2),
        ("50000 100000", 1),
        ("garbage", None),
        ("", None),
    ],
)
def test_cgroup_quota(tmp_path, text, expected):
    path = tmp_path / "cpu.max"
    path.write_text(text)
    assert cores._cgroup_limit(path) == expected


def test_missing_cgroup_file_means_no_quota(tmp_path):
    assert cores._cgroup_limit(tmp_path / "absent") is None


def test_available_cores_follows_affinity_and_quota(monkeypatch):
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1, 2, 3}, raising=False)
    monkeypatch.setattr(cores, "_cgroup_limit", lambda: None)
    assert cores.available_cores() == 4
    monkeypatch.setattr(cores, "_cgroup_limit", lambda: 2)
    assert cores.available_cores() == 2
    monkeypatch.setattr(cores, "_cgroup_limit", lambda: 16)
    assert cores.available_cores() == 4
