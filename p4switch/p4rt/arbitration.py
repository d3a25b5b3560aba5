"""Primary/backup arbitration among P4Runtime clients (spec section 5).

A pure state machine: the gRPC layer reports stream events and sends the
notifications this module returns.  Rules implemented (P4Runtime >= 1.1):

* the primary of a (device, role) is the live client whose election id is
  greater than or equal to the highest election id ever seen for it;
* two live clients may not share an election id (INVALID_ARGUMENT);
* when the primary leaves, nobody is promoted: every backup is told that
  there is no primary (NOT_FOUND) until some client announces an election id
  at least as high as the highest seen;
* notifications carry the highest election id seen (unset before any
  primary), OK to the primary and ALREADY_EXISTS to backups.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Hashable

from .errors import Code, P4RTError

Stream = Hashable
"""Whatever identifies one client's stream (the server uses an object per stream)."""


@dataclass
class Notice:
    """One arbitration update to send on ``stream``."""

    stream: Stream
    election_id: int | None
    code: Code
    role: str


@dataclass
class _Client:
    device_id: int
    role: str
    election_id: int | None


@dataclass
class _RoleState:
    highest: int | None = None
    primary: Stream | None = None
    clients: dict[Stream, _Client] = field(default_factory=dict)


class Arbiter:
    """Tracks live clients per role and decides who is primary."""

    def __init__(self, device_id: int) -> None:
        self.device_id = device_id
        self.roles: dict[str, _RoleState] = {}
        self.streams: dict[Stream, _Client] = {}

    def _state(self, role: str) -> _RoleState:
        return self.roles.setdefault(role, _RoleState())

    def update(self, stream: Stream, device_id: int, role: str, election_id: int | None) -> list[Notice]:
        """Handle a ``MasterArbitrationUpdate``; raises P4RTError to close the stream."""
        known = self.streams.get(stream)
        if known is None:
            if device_id != self.device_id:
                raise P4RTError(Code.NOT_FOUND, f"unknown device id {device_id} (this switch is {self.device_id})")
        else:
            if device_id != known.device_id:
                raise P4RTError(Code.FAILED_PRECONDITION, "device id differs from the one this stream announced")
            if role != known.role:
                raise P4RTError(Code.FAILED_PRECONDITION, "role differs from the one this stream announced")
        st = self._state(role)
        if election_id is not None:
            for other, c in st.clients.items():
                if other != stream and c.election_id == election_id:
                    raise P4RTError(Code.INVALID_ARGUMENT, f"election id {election_id} is used by another live client")
        was_primary = st.primary == stream
        client = known or _Client(device_id, role, election_id)
        client.election_id = election_id
        st.clients[stream] = client
        self.streams[stream] = client

        if election_id is not None and (st.highest is None or election_id >= st.highest):
            st.highest = election_id
            st.primary = stream
            if was_primary:
                return [self._notice(st, stream, role)]
            return self._notify_all(st, role)
        # Becomes (or stays) a backup.
        if was_primary:
            st.primary = None
            return self._notify_all(st, role)
        return [self._notice(st, stream, role)]

    def remove(self, stream: Stream) -> list[Notice]:
        """The stream closed; notify the others if it was the primary."""
        client = self.streams.pop(stream, None)
        if client is None:
            return []
        st = self._state(client.role)
        st.clients.pop(stream, None)
        if st.primary == stream:
            st.primary = None
            return self._notify_all(st, client.role)
        return []

    def is_primary(self, stream: Stream) -> bool:
        c = self.streams.get(stream)
        return c is not None and self._state(c.role).primary == stream

    def check_write(self, device_id: int, role: str, election_id: int | None) -> None:
        """The spec's checks before a Write/SetForwardingPipelineConfig."""
        if device_id != self.device_id:
            raise P4RTError(Code.NOT_FOUND, f"unknown device id {device_id} (this switch is {self.device_id})")
        st = self.roles.get(role)
        if st is None or st.primary is None or election_id is None:
            raise P4RTError(Code.PERMISSION_DENIED, "the client is not the primary (no primary with this election id)")
        primary = st.clients[st.primary]
        if primary.election_id != election_id:
            raise P4RTError(Code.PERMISSION_DENIED, f"election id {election_id} is not the primary's")

    def becomes_primary(self, role: str, election_id: int | None) -> bool:
        """Whether an update announcing ``election_id`` for ``role`` would make its stream primary."""
        highest = self.roles[role].highest if role in self.roles else None
        return election_id is not None and (highest is None or election_id >= highest)

    def backups(self) -> list[Stream]:
        """Every live stream that is not its role's primary."""
        return [s for st in self.roles.values() for s in st.clients if s != st.primary]

    def live_roles(self) -> set[str]:
        """Roles with at least one live client."""
        return {role for role, st in self.roles.items() if st.clients}

    def primary_streams(self) -> list[Stream]:
        return [st.primary for st in self.roles.values() if st.primary is not None]

    def _notice(self, st: _RoleState, stream: Stream, role: str) -> Notice:
        if st.primary is None:
            code = Code.NOT_FOUND
        elif st.primary == stream:
            code = Code.OK
        else:
            code = Code.ALREADY_EXISTS
        return Notice(stream, st.highest, code, role)

    def _notify_all(self, st: _RoleState, role: str) -> list[Notice]:
        # The new primary hears last, as the spec orders the steps.
        streams = sorted(st.clients, key=lambda s: s == st.primary)
        return [self._notice(st, s, role) for s in streams]
