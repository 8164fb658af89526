"""The Dask connection's check that every worker runs this process's ltrfeat files."""

from __future__ import annotations

import pytest

from ltrfeat.core.dask_cluster import check_workers
from ltrfeat.core.errors import LtrfeatError
from ltrfeat.core.versions import package_digest


class _Client:
    def __init__(self, answer):
        self.answer = answer

    def run(self, fn):
        if isinstance(self.answer, Exception):
            raise self.answer
        return self.answer


def test_workers_of_a_local_cluster_run_the_same_files(dask_client):
    check_workers(dask_client)  # no error
    assert set(dask_client.run(package_digest).values()) == {package_digest()}


def test_a_worker_with_other_files_is_named_in_one_line():
    here = package_digest()
    client = _Client({"tcp://a:1": here, "tcp://b:2": "0" * 16, "tcp://c:3": here})
    with pytest.raises(LtrfeatError) as err:
        check_workers(client)
    message = str(err.value)
    assert "1 of 3 Dask workers (tcp://b:2) run other ltrfeat files" in message
    assert "install the same ltrfeat on every worker" in message and "\n" not in message


def test_a_worker_without_ltrfeat_is_a_one_line_error():
    with pytest.raises(LtrfeatError, match="a Dask worker cannot run ltrfeat .ModuleNotFoundError"):
        check_workers(_Client(ModuleNotFoundError("No module named 'ltrfeat'")))
