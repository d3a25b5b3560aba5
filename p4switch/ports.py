"""Switch ports on real Linux interfaces, and per-port pcap files.

Each port is an ``AF_PACKET`` raw socket bound to one interface in
promiscuous mode, so the switch sees every frame on the wire whatever its
destination MAC, as a hardware switch port would.  Frames the socket itself
sent are seen again by a packet socket (``PACKET_OUTGOING``); they are
ignored, otherwise the switch would process its own output.

Interfaces may vanish under a running switch (Mininet deletes its veth
pairs while switches still run; an operator may ``ip link del`` one).  A
port whose interface is gone is *lost*: it logs one line naming the port and
the kernel's error, stops receiving and sending (frames for it are counted,
not sent), and every other port and the P4Runtime server carry on.  A link
that merely goes down is not lost: the kernel re-attaches the socket when
the link comes back up.

Pcap files use the classic libpcap format (microsecond timestamps, link type
Ethernet) so tcpdump, Wireshark and Scapy read them; BMv2 names them
``<iface>_in.pcap``/``<iface>_out.pcap`` and so do we.
"""

from __future__ import annotations

import errno
import logging
import os
import select
import socket
import struct
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO, Callable

LOG = logging.getLogger("p4mcc.p4switch.ports")

ETH_P_ALL = 0x0003
SOL_PACKET = 263
PACKET_ADD_MEMBERSHIP = 1
PACKET_MR_PROMISC = 1
PACKET_IGNORE_OUTGOING = 23
PACKET_OUTGOING = 4
#: Linux's SO_TIMESTAMPNS (= SCM_TIMESTAMPNS): a struct timespec per received frame.
SO_TIMESTAMPNS = 35
_TS_SPACE = socket.CMSG_SPACE(16)
MAX_FRAME = 65536

#: send(2) errors meaning the socket's interface no longer exists (the kernel
#: unbinds a packet socket from an unregistered device: ENXIO, or ENODEV).
GONE_ERRNOS = frozenset({errno.ENXIO, errno.ENODEV})
#: How often the reader re-checks a port whose link went down, so a deletion
#: the socket reported only as "Network is down" is found within this time.
DOWN_RECHECK_S = 0.5

PCAP_MAGIC_US = 0xA1B2C3D4
LINKTYPE_ETHERNET = 1


class PortError(OSError):
    """An interface cannot be opened as a switch port."""


class PcapWriter:
    """Appends frames to a libpcap file; thread-safe, flushed per frame.

    Flushing per frame costs speed but means a test or a user reading the
    file while the switch runs sees every frame written so far.
    """

    def __init__(self, path: str | os.PathLike[str], snaplen: int = MAX_FRAME) -> None:
        self.path = Path(path)
        self._lock = threading.Lock()
        self._f: BinaryIO = open(self.path, "wb")
        self._f.write(struct.pack("<IHHiIII", PCAP_MAGIC_US, 2, 4, 0, 0, snaplen, LINKTYPE_ETHERNET))
        self._f.flush()

    def write(self, frame: bytes, ts: float | None = None) -> None:
        ts = time.time() if ts is None else ts
        sec = int(ts)
        usec = int(round((ts - sec) * 1e6))
        if usec >= 1_000_000:
            sec, usec = sec + 1, usec - 1_000_000
        with self._lock:
            if self._f.closed:
                return
            self._f.write(struct.pack("<IIII", sec, usec, len(frame), len(frame)) + frame)
            self._f.flush()

    def close(self) -> None:
        with self._lock:
            if not self._f.closed:
                self._f.close()


def read_pcap(path: str | os.PathLike[str]) -> list[tuple[float, bytes]]:
    """Read a classic libpcap file written by :class:`PcapWriter` (used by tests and tools)."""
    data = Path(path).read_bytes()
    if len(data) < 24:
        raise ValueError(f"{path}: too short for a pcap header")
    magic = struct.unpack_from("<I", data)[0]
    if magic != PCAP_MAGIC_US:
        raise ValueError(f"{path}: not a little-endian microsecond pcap file")
    out = []
    off = 24
    while off + 16 <= len(data):
        sec, usec, incl, _orig = struct.unpack_from("<IIII", data, off)
        off += 16
        out.append((sec + usec / 1e6, data[off : off + incl]))
        off += incl
    return out


@dataclass(frozen=True)
class PortSpec:
    """``PORT@IFACE`` as ``simple_switch`` takes it on the command line."""

    port: int
    iface: str

    @classmethod
    def parse(cls, text: str) -> "PortSpec":
        port_s, sep, iface = text.partition("@")
        if not sep or not iface:
            raise ValueError(f"expected PORT@IFACE, got {text!r}")
        try:
            port = int(port_s)
        except ValueError:
            raise ValueError(f"port number in {text!r} is not an integer") from None
        if not 0 <= port < 512:
            raise ValueError(f"port {port} out of range 0..511 (v1model ports are 9 bits)")
        return cls(port, iface)


class Port:
    """One switch port: a promiscuous raw socket on an interface."""

    def __init__(self, port: int, iface: str, pcap_dir: str | os.PathLike[str] | None = None) -> None:
        self.port = port
        self.iface = iface
        try:
            ifindex = socket.if_nametoindex(iface)
        except OSError:
            raise PortError(f"port {port}: no interface named {iface!r}") from None
        try:
            self.sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
        except PermissionError:
            raise PortError(f"port {port}: opening a raw socket on {iface} needs root or CAP_NET_RAW") from None
        self.sock.bind((iface, ETH_P_ALL))
        mreq = struct.pack("iHH8s", ifindex, PACKET_MR_PROMISC, 0, b"")
        self.sock.setsockopt(SOL_PACKET, PACKET_ADD_MEMBERSHIP, mreq)
        try:
            self.sock.setsockopt(SOL_PACKET, PACKET_IGNORE_OUTGOING, 1)
        except OSError:
            pass  # older kernels: the pkttype check in recv() does the same
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
        # The kernel stamps each frame when it arrives: a frame that waited in
        # the socket while the switch was busy keeps its own arrival instant,
        # so the link emulation after it does not add the wait to its delay.
        try:
            self.sock.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
            self._stamped = True
        except OSError:
            self._stamped = False
        #: Arrival instant of the last frame ``recv`` returned, on
        #: ``time.monotonic``'s clock (None: the kernel gave no stamp).
        self.rx_time: float | None = None
        self.sock.setblocking(False)
        self.pcap_in: PcapWriter | None = None
        self.pcap_out: PcapWriter | None = None
        if pcap_dir is not None:
            Path(pcap_dir).mkdir(parents=True, exist_ok=True)
            self.pcap_in = PcapWriter(Path(pcap_dir) / f"{iface}_in.pcap")
            self.pcap_out = PcapWriter(Path(pcap_dir) / f"{iface}_out.pcap")
        self.ifindex = ifindex
        self.rx_packets = self.rx_errors = self.tx_packets = self.tx_errors = 0
        self._rx_errnos_logged: set[int | None] = set()
        #: Frames not sent because the port is lost.
        self.tx_lost = 0
        #: Why the port stopped for good (None while it is usable).
        self.lost: str | None = None
        #: True between a "Network is down" from the socket and the next frame.
        self.link_down = False
        self._lost_lock = threading.Lock()

    def fileno(self) -> int:
        return self.sock.fileno()

    def interface_present(self) -> bool:
        """Whether the interface this port was opened on still exists (same index, same name)."""
        try:
            return socket.if_indextoname(self.ifindex) == self.iface
        except OSError:
            return False

    def mark_lost(self, reason: str) -> bool:
        """Stop using this port for good; logs one line the first time (True then)."""
        with self._lost_lock:
            if self.lost is not None:
                return False
            self.lost = reason
        LOG.warning("port %d (%s) lost: %s; carrying on without it", self.port, self.iface, reason)
        return True

    def check_down(self) -> None:
        """A down link whose interface has since been deleted becomes lost."""
        if self.link_down and self.lost is None and not self.interface_present():
            self.mark_lost(f"interface {self.iface} was removed")

    def recv(self) -> bytes | None:
        """One received frame (never one this host sent), or None when none waits.

        Socket errors are handled here, never raised: the port is lost if its
        interface is gone; "Network is down" on a present interface marks the
        link down (the kernel re-attaches the socket when it comes back up);
        any other error is counted in ``rx_errors`` and logged once per kind.
        """
        if self.lost is not None:
            return None
        while True:
            try:
                if self._stamped:
                    data, anc, _flags, addr = self.sock.recvmsg(MAX_FRAME, _TS_SPACE)
                else:
                    data, addr = self.sock.recvfrom(MAX_FRAME)
                    anc = []
            except (BlockingIOError, InterruptedError):
                return None
            except OSError as e:
                self._recv_error(e)
                return None
            if addr[2] != PACKET_OUTGOING:
                break
        self.rx_time = None
        for level, kind, raw in anc:
            if level == socket.SOL_SOCKET and kind == SO_TIMESTAMPNS and len(raw) >= 16:
                sec, nsec = struct.unpack_from("qq", raw)
                now = time.monotonic()
                # wall-clock stamp -> monotonic clock; never in the future
                self.rx_time = min(now, sec + nsec * 1e-9 - (time.time() - now))
        self.rx_packets += 1
        if self.link_down:
            self.link_down = False
            LOG.info("port %d (%s): link up", self.port, self.iface)
        if self.pcap_in is not None:
            self.pcap_in.write(data)
        return data

    def _recv_error(self, e: OSError) -> None:
        reason = f"{e.strerror or e} (errno {e.errno})"
        if not self.interface_present():
            self.mark_lost(f"interface {self.iface} is gone: {reason}")
        elif e.errno == errno.ENETDOWN:
            # Link down, or a deletion still in progress: the reader re-checks.
            if not self.link_down:
                self.link_down = True
                LOG.info("port %d (%s): link down: %s", self.port, self.iface, reason)
        else:
            # The kernel reports a socket error once; the port stays usable.
            self.rx_errors += 1
            if e.errno not in self._rx_errnos_logged:
                self._rx_errnos_logged.add(e.errno)
                LOG.warning("port %d (%s): receive error: %s", self.port, self.iface, reason)

    def send(self, frame: bytes) -> bool:
        """Transmit ``frame``; False (and counted) when the kernel refuses it.

        An error saying the interface is gone makes the port lost; later
        frames are counted in ``tx_lost`` without a system call.
        """
        if self.lost is not None:
            self.tx_lost += 1
            return False
        try:
            self.sock.send(frame)
        except OSError as e:
            if e.errno in GONE_ERRNOS or (e.errno == errno.ENETDOWN and not self.interface_present()):
                self.mark_lost(f"interface {self.iface} is gone: {e.strerror or e} (errno {e.errno})")
                self.tx_lost += 1
            else:
                self.tx_errors += 1
            return False
        self.tx_packets += 1
        if self.pcap_out is not None:
            self.pcap_out.write(frame)
        return True

    def close(self) -> None:
        self.sock.close()
        for w in (self.pcap_in, self.pcap_out):
            if w is not None:
                w.close()


class PortReader:
    """A thread that waits on every port and hands frames to ``on_frame``.

    ``on_frame(port, frame, now)`` runs in the reader thread; ``now`` is the
    frame's arrival instant on ``time.monotonic``'s clock (the kernel's
    stamp, or the time it was read when there is none).  ``stop()`` wakes the thread through a
    pipe so shutdown never waits for traffic.  Lost ports are dropped from
    the poll set (whichever thread found them lost); the others go on.
    """

    def __init__(self, ports: list[Port], on_frame: Callable[[int, bytes, float], None]) -> None:
        self.ports = {p.fileno(): p for p in ports}
        self.on_frame = on_frame
        self._r, self._w = os.pipe()
        self._stop = False
        self.errors = 0
        self._thread = threading.Thread(target=self._run, name="p4switch-ports", daemon=True)

    @property
    def lost_ports(self) -> list[Port]:
        """Ports that stopped for good, in port order."""
        return sorted((p for p in self.ports.values() if p.lost is not None), key=lambda p: p.port)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop = True
        try:
            os.write(self._w, b"x")
        except OSError:
            pass
        self._thread.join(timeout=5)
        os.close(self._r)
        os.close(self._w)

    def _run(self) -> None:
        from .linkemu import realtime_thread

        # frames reach the pipeline and the link queues without waiting for a CPU
        realtime_thread()
        poller = select.poll()
        active = dict(self.ports)
        for fd in active:
            poller.register(fd, select.POLLIN)
        poller.register(self._r, select.POLLIN)
        while not self._stop:
            # Wait forever unless a down link must be re-checked for deletion.
            down = any(p.link_down for p in active.values())
            events = poller.poll(DOWN_RECHECK_S * 1000 if down else None)
            for fd, _ev in events:
                if fd == self._r:
                    return
                port = active.get(fd)
                if port is None:
                    continue
                for _ in range(64):  # bounded burst per port keeps ports fair
                    frame = port.recv()
                    if frame is None:
                        break
                    try:
                        at = port.rx_time
                        self.on_frame(port.port, frame, time.monotonic() if at is None else at)
                    except Exception:  # one bad frame must not stop the port reader
                        self.errors += 1
                        LOG.exception("error while handling a frame from port %d", port.port)
            for fd, port in list(active.items()):
                port.check_down()
                if port.lost is not None:  # lost here or by a send in another thread
                    poller.unregister(fd)
                    del active[fd]
