"""Per-port packet captures of a run: what to capture, and the pcap files both engines write.

A run captures when ``p4mcc sim``/``p4mcc run`` get ``--pcap`` or the scenario
has a ``capture:`` section::

    capture:
      sessions: [tfmcc]     # only these sessions' (or TCP flows') packets; default all
      ports: [s1-p1, s2]    # only these switch ports (or every port of s2); default all
      snaplen: 128          # keep the first N bytes of each frame; default whole frames

Files go to ``<results>/pcaps/<switch>-eth<port>_in.pcap`` (frames the switch
received on that port) and ``..._out.pcap`` (frames it sent), the names the
built-in switch and BMv2 use.  Timestamps are seconds since the run's start
(time 0 = scenario time 0) in both engines, so the same scenario's captures
line up in Wireshark; the simulator's are its simulated times.

IGMP frames are always kept (they are few and explain every join and leave).
"""

from __future__ import annotations

import argparse
import struct
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO, Iterator

#: Folder of a results directory that holds the captures.
PCAP_DIR = "pcaps"
PCAP_MAGIC_US = 0xA1B2C3D4
LINKTYPE_ETHERNET = 1
MAX_SNAPLEN = 65535
_HDR = struct.Struct("<IHHiIII")
_REC = struct.Struct("<IIII")


@dataclass(frozen=True)
class CaptureSpec:
    """What a run captures; empty tuples mean everything."""

    #: names of sessions or TCP flows whose packets are kept
    sessions: tuple[str, ...] = ()
    #: (switch, port) pairs; port None means every port of that switch
    ports: tuple[tuple[str, int | None], ...] = ()
    snaplen: int = MAX_SNAPLEN

    def wants_port(self, switch: str, port: int) -> bool:
        return not self.ports or any(s == switch and p in (None, port) for s, p in self.ports)


def parse_capture(raw: Any, switch_names: set[str], flow_names: set[str]) -> tuple[CaptureSpec | None, list[str]]:
    """Validate a scenario's ``capture:`` value; returns (spec, problems).

    ``true`` captures everything, ``false``/absent nothing.
    """
    if raw is None or raw is False:
        return None, []
    if raw is True:
        return CaptureSpec(), []
    if not isinstance(raw, dict):
        return None, [f"capture: expected true or a mapping, got {type(raw).__name__}"]
    problems: list[str] = []
    unknown = set(raw) - {"sessions", "ports", "snaplen"}
    if unknown:
        problems.append(f"capture: unknown key(s) {', '.join(sorted(map(str, unknown)))} "
                        "(expected sessions, ports, snaplen)")
    sessions = raw.get("sessions", []) or []
    if not isinstance(sessions, list) or not all(isinstance(s, str) for s in sessions):
        problems.append("capture.sessions: expected a list of session or TCP flow names")
        sessions = []
    for s in sessions:
        if s not in flow_names:
            problems.append(f"capture.sessions: no session or TCP flow named {s!r}")
    ports_raw = raw.get("ports", []) or []
    ports: list[tuple[str, int | None]] = []
    if not isinstance(ports_raw, list):
        problems.append("capture.ports: expected a list like [s1-p1, s2]")
        ports_raw = []
    for p in ports_raw:
        try:
            ports.append(parse_port(str(p), switch_names))
        except ValueError as e:
            problems.append(f"capture.ports: {e}")
    snaplen = raw.get("snaplen", MAX_SNAPLEN)
    if not isinstance(snaplen, int) or isinstance(snaplen, bool) or not 64 <= snaplen <= MAX_SNAPLEN:
        problems.append(f"capture.snaplen: expected an integer 64..{MAX_SNAPLEN}, got {snaplen!r}")
        snaplen = MAX_SNAPLEN
    return CaptureSpec(tuple(sessions), tuple(ports), snaplen), problems


def parse_port(text: str, switch_names: set[str]) -> tuple[str, int | None]:
    """``s1-p2``, ``s1-eth2`` or ``s1`` (every port) -> (switch, port or None)."""
    name, sep, port = text.rpartition("-")
    if sep and name in switch_names:
        for prefix in ("p", "eth"):
            if port.startswith(prefix) and port[len(prefix):].isdigit():
                return name, int(port[len(prefix):])
    if text in switch_names:
        return text, None
    raise ValueError(f"{text!r} is not a switch port (s1-p2, s1-eth2) or a switch name")


def spec_from_cli(scenario: Any, sessions: list[str] | None, ports: list[str] | None) -> CaptureSpec:
    """The capture of ``--pcap [--pcap-session S] [--pcap-port P]``: the scenario's, narrowed.

    Raises ValueError with a one-line message for a name the scenario lacks.
    """
    base = scenario.capture or CaptureSpec()
    switches = set(scenario.topology.switches)
    flows = {s.name for s in scenario.sessions} | {f.name for f in scenario.tcp_flows}
    for s in sessions or ():
        if s not in flows:
            raise ValueError(f"--pcap-session: no session or TCP flow named {s!r}")
    try:
        port_list = tuple(parse_port(p, switches) for p in ports or ())
    except ValueError as e:
        raise ValueError(f"--pcap-port: {e}") from None
    return CaptureSpec(tuple(sessions) if sessions else base.sessions,
                       port_list or base.ports, base.snaplen)


def add_pcap_arguments(p: argparse.ArgumentParser) -> None:
    """``--pcap`` and its filters (shared with ``p4mcc run``; see docs/captures.md)."""
    p.add_argument("--pcap", action="store_true",
                   help="write per-port pcaps into <out>/pcaps (the scenario's capture: filters apply)")
    p.add_argument("--pcap-session", action="append", metavar="NAME",
                   help="with --pcap: only this session's or TCP flow's packets (repeatable)")
    p.add_argument("--pcap-port", action="append", metavar="PORT",
                   help="with --pcap: only this switch port (s1-p2) or switch (s1) (repeatable)")


def capture_from_args(args: argparse.Namespace, scenario: Any) -> CaptureSpec | None:
    """The run's capture spec, or None; raises ValueError for a bad name."""
    if (args.pcap_session or args.pcap_port) and not args.pcap:
        raise ValueError("--pcap-session and --pcap-port need --pcap")
    if not args.pcap:
        return getattr(scenario, "capture", None)
    return spec_from_cli(scenario, args.pcap_session, args.pcap_port)


@dataclass
class FrameFilter:
    """Keeps the frames of the chosen sessions (by UDP/TCP port); IGMP always."""

    udp_ports: frozenset[int] = frozenset()
    tcp_ports: frozenset[int] = frozenset()
    everything: bool = True

    @classmethod
    def for_scenario(cls, spec: CaptureSpec, scenario: Any) -> "FrameFilter":
        if not spec.sessions:
            return cls()
        chosen = set(spec.sessions)
        udp = frozenset(s.port for s in scenario.sessions if s.name in chosen)
        tcp = frozenset(f.port for f in scenario.tcp_flows if f.name in chosen)
        return cls(udp, tcp, False)

    def keep(self, frame: bytes) -> bool:
        if self.everything:
            return True
        if len(frame) < 34 or frame[12:14] != b"\x08\x00":
            return False
        proto = frame[23]
        if proto == 2:  # IGMP
            return True
        l4 = 14 + (frame[14] & 0x0F) * 4
        if len(frame) < l4 + 4:
            return False
        sport, dport = struct.unpack_from("!HH", frame, l4)
        ports = self.udp_ports if proto == 17 else self.tcp_ports if proto == 6 else frozenset()
        return sport in ports or dport in ports


class PcapFile:
    """A classic libpcap file (microsecond stamps, Ethernet), buffered; timestamps as given."""

    def __init__(self, path: Path, snaplen: int = MAX_SNAPLEN) -> None:
        self.path = path
        self.snaplen = snaplen
        self.frames = 0
        self._f: BinaryIO = open(path, "wb")
        self._f.write(_HDR.pack(PCAP_MAGIC_US, 2, 4, 0, 0, snaplen, LINKTYPE_ETHERNET))

    def write(self, ts: float, frame: bytes) -> None:
        us = int(round(ts * 1e6))
        data = frame[: self.snaplen]
        self._f.write(_REC.pack(us // 1_000_000, us % 1_000_000, len(data), len(frame)) + data)
        self.frames += 1

    def close(self) -> None:
        self._f.close()


def read_frames(path: Path) -> Iterator[tuple[float, bytes]]:
    """Stream (timestamp, frame) from a classic little-endian microsecond pcap file."""
    with open(path, "rb") as f:
        head = f.read(_HDR.size)
        if len(head) < _HDR.size or _HDR.unpack(head)[0] != PCAP_MAGIC_US:
            raise ValueError(f"{path}: not a little-endian microsecond pcap file")
        while True:
            rec = f.read(_REC.size)
            if len(rec) < _REC.size:
                return
            sec, usec, incl, _orig = _REC.unpack(rec)
            data = f.read(incl)
            if len(data) < incl:
                return  # a record cut short by a stopped writer
            yield sec + usec / 1e6, data


def rebase(raw_dir: Path, out_dir: Path, spec: CaptureSpec, flt: FrameFilter, t0_wall: float,
           port_of: dict[str, tuple[str, int]]) -> list[Path]:
    """Copy a switch's own per-port pcaps into ``out_dir`` as run captures.

    Timestamps become seconds since ``t0_wall`` (the run's start), and only
    the chosen ports and sessions are kept.  ``port_of`` maps an interface name
    (``s1-eth2``) to (switch, port).  Returns the files written.
    """
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for src in sorted(raw_dir.glob("*.pcap")):
        iface, _, direction = src.stem.rpartition("_")
        where = port_of.get(iface)
        if where is None or direction not in ("in", "out") or not spec.wants_port(*where):
            continue
        dst = PcapFile(out_dir / src.name, spec.snaplen)
        try:
            for ts, frame in read_frames(src):
                if ts >= t0_wall and flt.keep(frame):  # set-up traffic before the start: left out
                    dst.write(ts - t0_wall, frame)
        finally:
            dst.close()
        written.append(dst.path)
    return written


@dataclass
class CaptureListing:
    """One capture file of a results folder (for ``p4mcc report``)."""

    path: Path
    frames: int
    first: float | None = None
    last: float | None = None
    extra: dict[str, Any] = field(default_factory=dict)


def list_captures(results: str | Path) -> list[CaptureListing]:
    """The pcap files of a results folder with their frame counts and time spans."""
    out = []
    for p in sorted((Path(results) / PCAP_DIR).glob("*.pcap")):
        n, first, last = 0, None, None
        try:
            for ts, _ in read_frames(p):
                n += 1
                first = ts if first is None else first
                last = ts
        except ValueError:
            continue
        out.append(CaptureListing(p, n, first, last))
    return out
