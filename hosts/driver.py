"""The asyncio UDP driver: runs any :class:`hosts.core.Endpoint` on real sockets.

The core decides; this module only does I/O:

* **Multicast.**  A sender transmits from a socket bound to its own unicast
  address and session port (that socket also receives the unicast feedback),
  with ``IP_MULTICAST_IF`` on its interface.  A receiver gets one socket per
  joined group, bound to (group, port), and joins with ``IP_ADD_MEMBERSHIP``
  on its interface -- so the kernel sends the IGMP report the switch snoops --
  and leaves with ``IP_DROP_MEMBERSHIP``.  Binding to the group address keeps
  a host that runs several agents from receiving other groups' traffic.
* **Feedback.**  Receivers send unicast from an unbound socket.
* **Time.**  ``now`` is the event loop's monotonic clock; core timers become
  ``loop.call_at`` callbacks, re-armed after every call into the core.
* **Metrics.**  Every :class:`~hosts.core.Metric` the core emits becomes one
  JSON line ``{"time", "role", "state", ...values}``; a final ``summary``
  line records datagram counts.
* **Robustness.**  A datagram the core rejects is counted by the core
  (``malformed``); an exception escaping the core is counted here
  (``errors``), reported once on stderr, and never stops the loop.
"""

from __future__ import annotations

import asyncio
import json
import socket
import struct
import sys
from typing import IO, Any

from p4mcc.hosts.core import Address, Delivered, Endpoint, JoinGroup, LeaveGroup, Metric
from p4mcc.hosts.registry import SessionConfig
from p4mcc.hosts.stampwindow import StampWindow, fold_stamp

#: Multicast TTL: enough for the emulated topologies, never leaves a lab.
MULTICAST_TTL = 16
#: A timer that fires at most this late is handled at its due instant (see ``_on_timer``).
TIMER_LATE_S = 0.005
#: At most this many overdue timers are handled in one wake-up of the loop.
TIMER_BATCH = 32
RECV_BUFFER = 4 * 1024 * 1024


def _mreq(group: str, iface: str) -> bytes:
    return struct.pack("4s4s", socket.inet_aton(group), socket.inet_aton(iface))


def is_multicast(ip: str) -> bool:
    first = int(ip.split(".")[0])
    return 224 <= first <= 239


class _Proto(asyncio.DatagramProtocol):
    def __init__(self, driver: "UdpDriver") -> None:
        self.driver = driver

    def datagram_received(self, data: bytes, addr: Any) -> None:
        self.driver._on_datagram(data, (addr[0], addr[1]))

    def error_received(self, exc: Exception) -> None:  # ICMP errors on send
        self.driver.stats["send_errors"] += 1


class UdpDriver:
    """Drives one endpoint over UDP until stopped or ``duration`` elapses."""

    def __init__(self, ep: Endpoint, config: SessionConfig, *, role: str,
                 metrics: IO[str] | None = None, bind_any: bool = False,
                 traffic_interval: float = 0.5) -> None:
        if role not in ("send", "recv"):
            raise ValueError(f"role must be 'send' or 'recv', got {role!r}")
        self.ep = ep
        self.cfg = config
        self.role = role
        self.metrics = metrics
        #: Bind the sender's socket to 0.0.0.0 instead of its address (hosts
        #: whose address is not local, e.g. behind NAT in a test).
        self.bind_any = bind_any
        self.stats: dict[str, int] = {
            "rx": 0, "tx": 0, "errors": 0, "send_errors": 0, "joins": 0, "leaves": 0,
            "delivered": 0, "rx_bytes": 0, "rx_mcast_bytes": 0, "tx_bytes": 0,
        }
        #: Seconds between "traffic" records (cumulative byte and message
        #: counters): experiment runners derive throughput and feedback rates
        #: from them the same way for every protocol.  0 turns them off.
        self.traffic_interval = traffic_interval
        self.loop: asyncio.AbstractEventLoop | None = None
        self._main: asyncio.DatagramTransport | None = None
        self._groups: dict[str, socket.socket] = {}
        self._timer: asyncio.TimerHandle | None = None
        self._timer_at: float | None = None
        self._done: asyncio.Future[None] | None = None
        self._warned = False
        self._rx_at = 0.0  # loop time of the last datagram handed to the core
        #: the stamps of the data received since the last "traffic" record (docs/stamp.md)
        self._stamps: dict[int, StampWindow] = {}

    # Sockets --------------------------------------------------------------
    def _sender_socket(self) -> socket.socket:
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM, socket.IPPROTO_UDP)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, RECV_BUFFER)
        s.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_TTL, MULTICAST_TTL)
        s.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_LOOP, 1)
        s.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_IF, socket.inet_aton(self.cfg.local))
        s.bind(("0.0.0.0" if self.bind_any else self.cfg.local, self.cfg.port))
        s.setblocking(False)
        return s

    def _feedback_socket(self) -> socket.socket:
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM, socket.IPPROTO_UDP)
        # Bound to the session port when free, so unicast to (local, port) -- an
        # MTCP child's ACKs to its agent -- reaches this receiver too
        # (:attr:`hosts.core.Endpoint.unicast_on_session_port`).
        if self.ep.unicast_on_session_port:
            try:
                s.bind((self.cfg.local, self.cfg.port))
            except OSError:
                s.bind((self.cfg.local, 0))
        else:
            s.bind((self.cfg.local, 0))
        s.setblocking(False)
        return s

    def _group_socket(self, group: str) -> socket.socket:
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM, socket.IPPROTO_UDP)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        if hasattr(socket, "SO_REUSEPORT"):
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, RECV_BUFFER)
        s.bind((group, self.cfg.port))
        s.setsockopt(socket.IPPROTO_IP, socket.IP_ADD_MEMBERSHIP, _mreq(group, self.cfg.local))
        s.setblocking(False)
        return s

    # Lifecycle ------------------------------------------------------------
    async def run(self, duration: float | None = None) -> dict[str, int]:
        """Start the endpoint, serve until ``duration`` seconds pass or :meth:`stop`."""
        self.loop = asyncio.get_running_loop()
        self._done = self.loop.create_future()
        sock = self._sender_socket() if self.role == "send" else self._feedback_socket()
        self._main, _ = await self.loop.create_datagram_endpoint(lambda: _Proto(self), sock=sock)
        if duration is not None:
            self.loop.call_later(duration, self.stop)
        self.ep.start(self.loop.time())
        self._flush()
        if self.traffic_interval > 0 and self.metrics is not None:
            self.loop.call_later(self.traffic_interval, self._traffic)
        try:
            await self._done
        finally:
            self._shutdown()
        return self.stats

    def stop(self) -> None:
        if self._done is not None and not self._done.done():
            self._done.set_result(None)

    def _shutdown(self) -> None:
        assert self.loop is not None
        try:
            self.ep.close(self.loop.time())
            self._flush()
        except Exception as exc:  # a broken close must not hide the summary
            self._error(exc)
        if self._timer is not None:
            self._timer.cancel()
        for group in list(self._groups):
            self._leave(group)
        if self._main is not None:
            self._main.close()
        self._write({"time": self.loop.time(), "role": self.ep.role, "state": "summary",
                     "malformed": self.ep.malformed, **self.stats})

    def _traffic(self) -> None:
        assert self.loop is not None
        if self._done is None or self._done.done():
            return
        st = self.stats
        rec = {"time": self.loop.time(), "role": self.ep.role, "state": "traffic",
               "rx_msgs": st["rx"], "rx_bytes": st["rx_bytes"], "rx_mcast_bytes": st["rx_mcast_bytes"],
               "tx_msgs": st["tx"], "tx_bytes": st["tx_bytes"], "delivered": st["delivered"]}
        window = self._stamps.get(0)
        if window is not None:
            if window.stamped:  # the interval's worst queue and tightest spare codes
                rec["stamp"] = window.byte()
            window.reset()
        self._write(rec)
        self.loop.call_later(self.traffic_interval, self._traffic)

    # Core calls -------------------------------------------------------------
    def _on_datagram(self, data: bytes, src: Address, multicast: bool = False) -> None:
        assert self.loop is not None
        self.stats["rx"] += 1
        self.stats["rx_bytes"] += len(data)
        if multicast:
            self.stats["rx_mcast_bytes"] += len(data)
            fold_stamp(self._stamps, 0, data)
        self._rx_at = self.loop.time()
        try:
            self.ep.receive_datagram(data, src, self._rx_at)
        except Exception as exc:
            self._error(exc)
        self._flush()

    def _on_timer(self) -> None:
        assert self.loop is not None
        due = self._timer_at
        self._timer = None
        self._timer_at = None
        for _ in range(TIMER_BATCH):
            now = self.loop.time()
            if due is not None and due <= now <= due + TIMER_LATE_S:
                # The event loop wakes up to a millisecond after the timer
                # (epoll counts whole milliseconds), more on a busy CPU.  A
                # pacing core that schedules its next packet from the instant
                # it is called would add that to every packet gap (5-30 %
                # below its rate at 1-6 Mb/s, half of WEBRC's 20 Mb/s); given
                # the due instant, as the simulator gives it, its gaps stay
                # exact and the lateness does not accumulate.  Never before a
                # datagram the core has already seen.
                now = max(due, self._rx_at)
            try:
                self.ep.handle_timer(now)
            except Exception as exc:
                self._error(exc)
                break
            # a timer already due runs here, not after another trip through the loop
            due = self.ep.get_timer()
            if due is None or due > self.loop.time():
                break
        self._flush()

    def _error(self, exc: Exception) -> None:
        self.stats["errors"] += 1
        if not self._warned:
            self._warned = True
            print(f"p4mcc host: {type(exc).__name__} in protocol core: {exc}", file=sys.stderr)

    def _flush(self) -> None:
        assert self.loop is not None
        for dg in self.ep.datagrams_to_send():
            transport = self._main
            if transport is None:
                continue
            try:
                transport.sendto(dg.data, dg.dest)
                self.stats["tx"] += 1
                self.stats["tx_bytes"] += len(dg.data)
            except OSError:
                self.stats["send_errors"] += 1
        while (ev := self.ep.next_event()) is not None:
            if isinstance(ev, JoinGroup):
                self._join(ev.group)
            elif isinstance(ev, LeaveGroup):
                self._leave(ev.group)
            elif isinstance(ev, Metric):
                self._write({"time": ev.time, "role": ev.role, "state": ev.state, **ev.values})
            elif isinstance(ev, Delivered):
                self.stats["delivered"] += 1
        when = self.ep.get_timer()
        if when != self._timer_at:
            if self._timer is not None:
                self._timer.cancel()
            self._timer, self._timer_at = None, when
            if when is not None:
                self._timer = self.loop.call_at(when, self._on_timer)

    def _join(self, group: str) -> None:
        assert self.loop is not None
        if group in self._groups:
            return
        try:
            sock = self._group_socket(group)
        except OSError as exc:
            self._error(exc)
            return
        self.loop.add_reader(sock.fileno(), self._readable, sock)
        self._groups[group] = sock
        self.stats["joins"] += 1

    def _readable(self, sock: socket.socket) -> None:
        """Drain a group socket (non-blocking) into the core."""
        for _ in range(64):
            try:
                data, addr = sock.recvfrom(65535)
            except (BlockingIOError, InterruptedError):
                return
            except OSError:
                self.stats["errors"] += 1
                return
            self._on_datagram(data, (addr[0], addr[1]), multicast=True)

    def _leave(self, group: str) -> None:
        sock = self._groups.pop(group, None)
        if sock is None:
            return
        if self.loop is not None:
            self.loop.remove_reader(sock.fileno())
        try:
            sock.setsockopt(socket.IPPROTO_IP, socket.IP_DROP_MEMBERSHIP, _mreq(group, self.cfg.local))
        except OSError:
            pass
        sock.close()
        self.stats["leaves"] += 1

    def _write(self, record: dict[str, Any]) -> None:
        if self.metrics is not None:
            self.metrics.write(json.dumps(record, sort_keys=True) + "\n")
            self.metrics.flush()


async def run_agent(ep: Endpoint, config: SessionConfig, role: str, *,
                    duration: float | None = None, metrics: IO[str] | None = None) -> dict[str, int]:
    """Convenience: drive ``ep`` for ``duration`` seconds and return the counters."""
    return await UdpDriver(ep, config, role=role, metrics=metrics).run(duration)
