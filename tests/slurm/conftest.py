"""The Slurm cluster fixture (tests.slurm.cluster): started once per session, skipped with the
reason where it cannot start (not root, packages missing, daemons that do not come up)."""

from __future__ import annotations

import pytest

from tests.slurm.cluster import Cluster, why_not


@pytest.fixture(scope="session")
def slurm(tmp_path_factory):
    reason = why_not()
    if reason:
        pytest.skip(reason)
    cluster = Cluster(tmp_path_factory.mktemp("slurm"))
    try:
        cluster.start()
    except (RuntimeError, OSError) as exc:
        cluster.stop()
        pytest.skip(f"the Slurm cluster did not start: {exc}")
    try:
        yield cluster
    finally:
        cluster.stop()
