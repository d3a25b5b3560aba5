"""Backups that sit idle cannot lock a controller out of the switch.

A backup can write nothing, so a switch full of them serves nobody.  The
server bounds backups to ``MAX_BACKUPS`` slots (the rest is kept for waiting
streams and one primary per role), closes a backup silent for
``BACKUP_IDLE_S``, and lets a new primary take the slot of the backup idle
longest.  All against a real server on loopback.
"""

from __future__ import annotations

import queue
import threading
import time

import grpc
import pytest
from test_server_grpc import Client, push, service  # noqa: F401

from finsy.proto import p4r
from p4mcc.p4switch.p4rt import server as server_mod

BACKUP, PRIMARY, NO_PRIMARY = 6, 0, 5  # ALREADY_EXISTS, OK, NOT_FOUND: codes of arbitration notices


class Pumped(Client):
    """A stream whose responses one thread reads into a queue, so ``recv``
    may time out and be called again (gRPC allows one reader at a time)."""

    def __init__(self, stub, election: int = 1) -> None:
        super().__init__(stub, election=election)
        self.inbox: queue.Queue = queue.Queue()
        threading.Thread(target=self._pump, daemon=True).start()

    def _pump(self) -> None:
        try:
            for m in self.responses:
                self.inbox.put(m)
        except BaseException as e:  # handed to the test's thread
            self.inbox.put(e)

    def recv(self, timeout: float = 5.0):
        try:
            item = self.inbox.get(timeout=timeout)
        except queue.Empty:
            raise TimeoutError("no stream message") from None
        if isinstance(item, BaseException):
            raise item
        return item


def primary(stub, election: int) -> Pumped:
    c = Pumped(stub, election=election)
    c.arbitrate()
    assert c.recv().arbitration.status.code == PRIMARY
    return c


def backup(stub, election: int) -> Pumped:
    c = Pumped(stub, election=election)
    c.arbitrate()
    assert c.recv().arbitration.status.code == BACKUP
    return c


def closed_code(c: Pumped, timeout: float = 5.0) -> grpc.StatusCode:
    """The status the server closed ``c`` with (arbitration notices before it are skipped)."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            c.recv(timeout=max(0.0, deadline - time.monotonic()))
        except grpc.RpcError as e:
            return e.code()


def test_a_restarting_controller_is_primary_at_once_past_255_would_be_backups(service):  # noqa: F811
    _, servicer, stub, _ = service
    ctl = primary(stub, election=1000)
    push(stub, election=1000)
    hostile, admitted, refused = [], 0, 0
    for e in range(1, 256):  # one at a time: each arbitrates before the next opens
        c = Pumped(stub, election=e)
        c.arbitrate()
        hostile.append(c)
        try:
            assert c.recv().arbitration.status.code == BACKUP
            admitted += 1
        except grpc.RpcError as e:
            assert e.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
            refused += 1
    assert admitted == server_mod.MAX_BACKUPS and refused == 255 - server_mod.MAX_BACKUPS
    ctl.close()  # the controller restarts; every backup hears there is no primary
    assert hostile[0].recv().arbitration.status.code == NO_PRIMARY
    again = primary(stub, election=1000)
    push(stub, election=1000)
    assert len(servicer._streams) <= server_mod.MAX_STREAMS
    again.close()
    for c in hostile:
        c.close()


def test_a_silent_backup_is_closed_after_the_bound_and_a_talking_one_stays(service, monkeypatch):  # noqa: F811
    _, _, stub, _ = service
    bound = 1.0
    monkeypatch.setattr(server_mod, "BACKUP_IDLE_S", bound)
    ctl = primary(stub, election=10)
    t0 = time.monotonic()  # before the silent backup's last (only) message
    silent, talking = backup(stub, 1), backup(stub, 2)
    closed = None
    while time.monotonic() - t0 < 3 * bound:  # the talking backup re-announces itself every round trip
        talking.arbitrate()
        assert talking.recv().arbitration.status.code == BACKUP
        if closed is None:
            try:
                silent.recv(timeout=0.05)
            except TimeoutError:
                continue
            except grpc.RpcError as e:
                closed, at = e, time.monotonic() - t0
        else:
            with pytest.raises(TimeoutError):
                talking.recv(timeout=0.05)
    assert closed is not None and closed.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
    assert "silent for 1 s" in closed.details()
    assert at >= bound  # not before its bound
    with pytest.raises(TimeoutError):  # the primary is never closed for silence
        ctl.recv(timeout=0.1)
    push(stub, election=10)
    for c in (ctl, talking):
        c.close()


def test_a_demoted_primary_counts_its_silence_from_the_demotion(service, monkeypatch):  # noqa: F811
    _, _, stub, _ = service
    bound = 0.5
    monkeypatch.setattr(server_mod, "BACKUP_IDLE_S", bound)
    old = primary(stub, election=5)
    with pytest.raises(TimeoutError):  # silent as primary for twice the bound
        old.recv(timeout=2 * bound)
    new = primary(stub, election=6)
    assert old.recv().arbitration.status.code == BACKUP
    t0 = time.monotonic()
    assert closed_code(old) == grpc.StatusCode.RESOURCE_EXHAUSTED
    # counted from its last message it would have gone at once; from the demotion, a bound later
    assert time.monotonic() - t0 >= bound / 2
    new.close()


def test_backup_slots_full_refuse_a_backup_and_a_new_primary_closes_the_idlest(service, monkeypatch):  # noqa: F811
    _, _, stub, _ = service
    monkeypatch.setattr(server_mod, "MAX_BACKUPS", 2)
    ctl = primary(stub, election=10)
    b1, b2 = backup(stub, 1), backup(stub, 2)
    extra = Pumped(stub, election=3)
    extra.arbitrate()
    with pytest.raises(grpc.RpcError) as ei:
        extra.recv()
    assert ei.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
    assert "at least the highest seen still gets in" in ei.value.details()
    b2.arbitrate()  # b2 speaks, so b1 is the backup idle longest
    assert b2.recv().arbitration.status.code == BACKUP
    new = primary(stub, election=20)  # demotes ctl: three backups for two slots
    assert closed_code(b1) == grpc.StatusCode.RESOURCE_EXHAUSTED
    assert ctl.recv().arbitration.status.code == BACKUP
    assert b2.recv().arbitration.status.code == BACKUP
    push(stub, election=20)
    for c in (ctl, b2, new):
        c.close()


def test_roles_beyond_the_bound_are_refused(service, monkeypatch):  # noqa: F811
    _, _, stub, _ = service
    monkeypatch.setattr(server_mod, "MAX_ROLES", 2)

    def in_role(name: str) -> Pumped:
        c = Pumped(stub)
        m = p4r.StreamMessageRequest()
        m.arbitration.device_id = 7
        m.arbitration.election_id.low = 1
        m.arbitration.role.name = name
        c.q.put(m)
        return c

    a, b, c = in_role("a"), in_role("b"), None
    assert a.recv().arbitration.status.code == PRIMARY and b.recv().arbitration.status.code == PRIMARY
    c = in_role("c")
    with pytest.raises(grpc.RpcError) as ei:
        c.recv()
    assert ei.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
    for x in (a, b):
        x.close()
