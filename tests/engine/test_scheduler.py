"""Priority queues of partitions and the batch collector."""

from __future__ import annotations

import threading
import time

import pytest

from cuzk.engine.jobs import Job, Priority, ProofKind, ProofRequest
from cuzk.engine.scheduler import BatchCollector, Closed, PartitionQueue, WorkItem


def job(name: str, prio: Priority, circuit: str = "c") -> Job:
    j = Job(name, ProofRequest(ProofKind.DEMO), prio, time.time(), b"")
    j.circuit_id = circuit
    return j


def test_critical_overtakes_queued_normal_partitions() -> None:
    q = PartitionQueue("q")
    normal = job("n", Priority.NORMAL)
    low = job("l", Priority.LOW)
    for i in range(3):
        q.put(WorkItem(normal, i, None, seq=1))
    q.put(WorkItem(low, 0, None, seq=2))
    crit = job("c", Priority.CRITICAL)
    for i in range(2):
        q.put(WorkItem(crit, i, None, seq=3))
    high = job("h", Priority.HIGH)
    q.put(WorkItem(high, 0, None, seq=4))
    order = [(it.job.job_id, it.index) for it in iter(lambda: q.get(0), None)]
    assert order == [("c", 0), ("c", 1), ("h", 0), ("n", 0), ("n", 1), ("n", 2), ("l", 0)]


def test_fifo_within_a_priority_and_removal() -> None:
    q = PartitionQueue("q")
    a, b = job("a", Priority.NORMAL), job("b", Priority.NORMAL)
    q.put(WorkItem(b, 0, None, seq=2))
    q.put(WorkItem(a, 1, None, seq=1))
    q.put(WorkItem(a, 0, None, seq=1))
    assert [it.index for it in q.remove_job("a")] == [0, 1]
    assert q.get(0).job is b
    assert q.get(0) is None


def test_bounded_put_waits_for_room() -> None:
    q = PartitionQueue("q", capacity=1)
    j = job("a", Priority.NORMAL)
    q.put(WorkItem(j, 0, None, seq=1))
    done = threading.Event()

    def producer() -> None:
        q.put(WorkItem(j, 1, None, seq=1))
        done.set()

    t = threading.Thread(target=producer)
    t.start()
    assert not done.wait(0.2)  # full: the producer waits
    assert q.get(0).index == 0
    assert done.wait(2)
    t.join()
    q.close()
    assert q.get(0).index == 1
    with pytest.raises(Closed):
        q.get(0)


def test_hint_tables_pass_a_full_queue_and_do_not_fill_it() -> None:
    """A partition whose witness the device makes (a hint table, no assignment)
    is light: it passes a queue full of assignments, and does not count
    towards the capacity they wait for."""
    import numpy as np

    from cuzk.engine.kinds.base import Witness

    q = PartitionQueue("q", capacity=1)
    j = job("a", Priority.NORMAL)
    heavy = WorkItem(j, 0, None, seq=1, witness=Witness(np.zeros((2, 4), np.uint64), ()))
    q.put(heavy)
    for i in range(1, 4):  # would block if they counted
        q.put(WorkItem(j, i, None, seq=1, witness=Witness(None, (), hints=np.zeros((1, 4)))))
    assert len(q) == 4
    assert q.get(0) is heavy
    other = WorkItem(j, 4, None, seq=1, witness=Witness(np.zeros((2, 4), np.uint64), ()))
    q.put(other, block=False)  # room again: three light items do not fill it
    assert q._heavy() == 1


def test_get_batch_takes_same_circuit_and_priority() -> None:
    q = PartitionQueue("q")
    a = job("a", Priority.NORMAL, "c1")
    b = job("b", Priority.NORMAL, "c2")
    c = job("c", Priority.NORMAL, "c1")
    for j, seq in ((a, 1), (b, 2), (c, 3)):
        q.put(WorkItem(j, 0, None, seq=seq))
    batch = q.get_batch(3, 0)
    assert [it.job.job_id for it in batch] == ["a", "c"]
    assert [it.job.job_id for it in q.get_batch(3, 0)] == ["b"]


class Released:
    def __init__(self) -> None:
        self.batches: list[list[str]] = []
        self.event = threading.Event()

    def __call__(self, jobs: list[Job]) -> None:
        self.batches.append([j.job_id for j in jobs])
        self.event.set()


def test_batch_flushes_when_full() -> None:
    rel = Released()
    bc = BatchCollector(3, 60_000, rel)
    for n in "abc":
        bc.add(job(n, Priority.NORMAL), batchable=True)
    assert rel.batches == [["a", "b", "c"]]


def test_batch_flushes_after_max_wait() -> None:
    rel = Released()
    bc = BatchCollector(4, 100, rel)
    bc.start()
    try:
        t = time.monotonic()
        bc.add(job("a", Priority.NORMAL), batchable=True)
        bc.add(job("b", Priority.NORMAL), batchable=True)
        assert rel.batches == []
        assert rel.event.wait(2)
        assert 0.08 <= time.monotonic() - t < 1.5
        assert rel.batches == [["a", "b"]]
    finally:
        bc.stop()


def test_higher_priority_flushes_early_and_is_never_held() -> None:
    rel = Released()
    bc = BatchCollector(4, 60_000, rel)
    bc.add(job("n1", Priority.NORMAL), batchable=True)
    bc.add(job("n2", Priority.NORMAL), batchable=True)
    assert rel.batches == []
    bc.add(job("crit", Priority.CRITICAL), batchable=True)
    assert rel.batches == [["n1", "n2"], ["crit"]]
    bc.add(job("post", Priority.HIGH), batchable=False)
    assert rel.batches[-1] == ["post"]
    bc.add(job("n3", Priority.NORMAL), batchable=True)
    assert bc.remove("n3") and not bc.remove("n3")
    bc.flush_all()
    assert rel.batches[-1] == ["post"]  # the emptied batch released nothing


def test_no_batching_at_size_one() -> None:
    rel = Released()
    bc = BatchCollector(1, 60_000, rel)
    bc.add(job("a", Priority.NORMAL), batchable=True)
    assert rel.batches == [["a"]]


def test_time_critical_items_pass_a_full_queue_and_outrank_what_is_queued() -> None:
    q = PartitionQueue("gpu", capacity=1)
    porep = job("p", Priority.NORMAL)
    q.put(WorkItem(porep, 0, None, seq=1))
    assert not q.outranks(Priority.NORMAL)
    blocked = threading.Thread(target=q.put, args=(WorkItem(porep, 1, None, seq=1),))
    blocked.start()
    blocked.join(0.2)
    assert blocked.is_alive()  # a PoRep partition waits for room
    q.put(WorkItem(job("w", Priority.CRITICAL), 0, None, seq=2))  # a WinningPoSt does not
    assert q.outranks(Priority.NORMAL) and not q.outranks(Priority.CRITICAL)
    assert q.get(0).job.job_id == "w"
    assert q.get(0).job.job_id == "p"
    blocked.join(5)
    assert not blocked.is_alive() and len(q) == 1
