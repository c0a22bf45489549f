"""`%cluster` in a real kernel process: it shows and sets the cluster, a sequence's chunks run
on a 2-worker LocalCluster with the same value, and shutting the kernel down closes the
cluster's worker processes."""
from __future__ import annotations

import time

import psutil
import pytest
from jupyter_client.manager import KernelManager

from .test_client import execute
from .test_dashboard_kernel import sequence, sequence_sum
from .test_protocol import RecordingKernel

TIMEOUT = 120


def run(kc, code: str) -> tuple[dict, str]:
    """The execute reply's content and the cell's stdout and result text."""
    reply, outputs = execute(kc, code, TIMEOUT)
    return reply, "".join(m["content"]["text"] if m["msg_type"] == "stream"
                          else m["content"]["data"]["text/plain"]
                          for m in outputs if m["msg_type"] in ("stream", "execute_result"))


@pytest.mark.kernel
def test_cluster_magic_runs_sequences_on_workers_and_shutdown_closes_them():
    manager = KernelManager(kernel_name="accel")
    manager.start_kernel()
    kc = manager.client()
    kc.start_channels()
    try:
        kc.wait_for_ready(timeout=TIMEOUT)
        reply, out = run(kc, "%cluster")
        assert out == "cluster: off (sequences run in this process)\n"
        reply, out = run(kc, "%cluster three")
        assert reply["ename"] == "MagicError" and "%cluster [local N|" in reply["evalue"]
        reply, out = run(kc, "%cluster local 2")
        assert out == "cluster: local 2 (2 worker processes, started on first use)\n"
        reply, out = run(kc, sequence(20_000))
        assert reply["status"] == "ok" and out == str(sequence_sum(20_000)), out
        reply, out = run(kc, "%cluster")
        assert out == "cluster: local 2 (2 worker processes, running)\n"
        kernel = psutil.Process(manager.provisioner.pid)
        children = kernel.children(recursive=True)
        assert len(children) >= 2            # the nannies and their workers
    finally:
        kc.stop_channels()
        manager.shutdown_kernel()            # a shutdown request: the kernel closes its cluster
    deadline = time.monotonic() + 30
    while any(c.is_running() and c.status() != psutil.STATUS_ZOMBIE for c in children) \
            and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not [c for c in children if c.is_running() and c.status() != psutil.STATUS_ZOMBIE]


def test_a_failed_cell_puts_the_cluster_back():
    kernel = RecordingKernel()
    assert kernel.run("%cluster local 2")["status"] == "ok"
    chosen = kernel.accel.cluster
    reply = kernel.run("%cluster off\nnope")
    assert reply["ename"] == "NameError"
    assert kernel.accel.cluster is chosen
    reply = kernel.run("%cluster local 3\nnope")
    assert kernel.accel.cluster is chosen and chosen.describe().startswith("local 2")
    assert kernel.run("%cluster off")["status"] == "ok" and kernel.accel.cluster is None
    assert kernel.run("%cluster")["status"] == "ok"
