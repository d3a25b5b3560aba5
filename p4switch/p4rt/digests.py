"""Digest buffering: DigestList batching, acknowledgements and suppression.

Per digest id (P4Runtime spec, "DigestEntry" and "DigestList"):

* a list is sent when ``max_list_size`` digests are buffered (0: no limit,
  everything buffered goes in one list) or the oldest buffered digest has
  waited ``max_timeout_ns`` (0: at once);
* with ``ack_timeout_ns`` > 0, data already sent is not buffered again until
  the list that carried it is acknowledged or the timeout passes, which stops
  a flow from flooding the controller with the same learn event.

Pure: the caller passes ``now`` and sends what :meth:`DigestBuffer.poll`
returns.
"""

from __future__ import annotations

import time
from collections import deque
from dataclasses import dataclass, field
from typing import Any

from finsy.proto import p4r


@dataclass
class _Queue:
    items: deque = field(default_factory=deque)  # (P4Data, key bytes, time buffered)
    next_list_id: int = 1
    pending: dict[bytes, float] = field(default_factory=dict)  # data key -> suppression deadline
    sent: dict[int, tuple[float, list[bytes]]] = field(default_factory=dict)  # list id -> (deadline, keys)


class DigestBuffer:
    """Buffers digests per digest id and forms DigestLists."""

    def __init__(self) -> None:
        self._queues: dict[int, _Queue] = {}

    def clear(self) -> None:
        self._queues.clear()

    def remove(self, digest_id: int) -> None:
        self._queues.pop(digest_id, None)

    def offer(self, digest_id: int, data: Any, now: float) -> bool:
        """Buffer one digest's data; False when it is suppressed (sent, not yet acknowledged)."""
        q = self._queues.setdefault(digest_id, _Queue())
        key = data.SerializeToString()
        deadline = q.pending.get(key)
        if deadline is not None and deadline > now:
            return False
        q.items.append((data, key, now))
        return True

    def poll(self, configs: dict[int, p4r.DigestEntry.Config], now: float) -> tuple[list[p4r.DigestList], float | None]:
        """The lists due at ``now`` and the next time something falls due (None: nothing)."""
        out: list[p4r.DigestList] = []
        wake: float | None = None
        for did, q in self._queues.items():
            cfg = configs.get(did)
            if cfg is None:
                continue
            self._expire(q, now)
            limit = cfg.max_list_size if cfg.max_list_size > 0 else max(1, len(q.items))
            timeout = cfg.max_timeout_ns / 1e9
            while q.items and (len(q.items) >= limit or now - q.items[0][2] >= timeout):
                batch = [q.items.popleft() for _ in range(min(limit, len(q.items)))]
                msg = p4r.DigestList(digest_id=did, list_id=q.next_list_id, timestamp=time.time_ns())
                msg.data.extend(data for data, _, _ in batch)
                if cfg.ack_timeout_ns:
                    deadline = now + cfg.ack_timeout_ns / 1e9
                    keys = [k for _, k, _ in batch]
                    for k in keys:
                        q.pending[k] = deadline
                    q.sent[q.next_list_id] = (deadline, keys)
                q.next_list_id = q.next_list_id % 0xFFFFFFFFFFFFFFFF + 1
                out.append(msg)
            for t in ([q.items[0][2] + timeout] if q.items else []) + ([min(q.pending.values())] if q.pending else []):
                wake = t if wake is None else min(wake, t)
        return out, wake

    def ack(self, digest_id: int, list_id: int) -> None:
        """The controller acknowledged a list: its data may be reported again."""
        q = self._queues.get(digest_id)
        if q is None:
            return
        _, keys = q.sent.pop(list_id, (0.0, []))
        for k in keys:
            q.pending.pop(k, None)

    @staticmethod
    def _expire(q: _Queue, now: float) -> None:
        for k in [k for k, dl in q.pending.items() if dl <= now]:
            del q.pending[k]
        for lid in [lid for lid, (dl, _) in q.sent.items() if dl <= now]:
            del q.sent[lid]
