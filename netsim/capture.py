"""Per-port pcaps of a simulated run, stamped with simulated time.

Every switch port gets the two files the built-in switch writes in Mininet
(``s1-eth2_in.pcap``, ``s1-eth2_out.pcap``; layout and filters in
:mod:`scenario.capture`).  The files are filled from the link channels'
taps, so capturing changes nothing in the run:

- ``_out``: a frame the switch put on the wire, stamped when its
  transmission starts (after any queueing; frames the queue dropped never
  left, frames the wire loses did);
- ``_in``: a frame that reached the switch, stamped when its last bit
  arrived (transmission plus propagation delay).

Each file's stamps rise monotonically because a channel is FIFO.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from p4mcc.netsim.host import HostNode
from p4mcc.netsim.link import Channel
from p4mcc.netsim.network import Network
from p4mcc.scenario.capture import PCAP_DIR, CaptureSpec, FrameFilter, PcapFile


@dataclass
class SimCapture:
    """The open capture files of one run; :meth:`close` when the run ends."""

    files: list[PcapFile] = field(default_factory=list)

    def close(self) -> dict[str, Any]:
        """Close every file; returns the numbers the summary keeps."""
        for f in self.files:
            f.close()
        return {"files": len(self.files), "frames": sum(f.frames for f in self.files)}


def attach(net: Network, spec: CaptureSpec, flt: FrameFilter, results: Path,
           end: float = float("inf")) -> SimCapture:
    """Open the chosen ports' pcaps under ``results/pcaps`` and tap their channels.

    Frames still on the wire at ``end`` (the run's duration) are left out: in
    the run they never arrive.
    """
    out_dir = Path(results) / PCAP_DIR
    out_dir.mkdir(parents=True, exist_ok=True)
    for old in out_dir.glob("*.pcap"):  # an earlier run's captures in this results folder
        old.unlink()
    cap = SimCapture()
    for link in net.links.values():
        # (switch node, its port, channel leaving it, channel entering it)
        ends = [(link.a, link.a_port, link.ab, link.ba), (link.b, link.b_port, link.ba, link.ab)]
        for node, port, leaving, entering in ends:
            if isinstance(node, HostNode):
                continue
            name = _node_name(net, node)
            if name is None or not spec.wants_port(name, port):
                continue
            iface = f"{name}-eth{port}"
            out_f = PcapFile(out_dir / f"{iface}_out.pcap", spec.snaplen)
            in_f = PcapFile(out_dir / f"{iface}_in.pcap", spec.snaplen)
            cap.files += [in_f, out_f]
            leaving.taps.append(_out_tap(out_f, flt, end))
            entering.taps.append(_in_tap(in_f, flt, end))
    return cap


def _node_name(net: Network, node: object) -> str | None:
    for name, sw in net.switches.items():
        if sw is node:
            return name
    return None


def _out_tap(f: PcapFile, flt: FrameFilter, end: float) -> Any:
    def tap(now: float, ch: Channel, frame: bytes, event: str) -> None:
        if event != "drop" and flt.keep(frame):
            # The frame was just accepted: its departure is the queue's last.
            start = ch._inflight[-1][0] - len(frame) * ch._sec_per_byte
            if start <= end:
                f.write(start, frame)

    return tap


def _in_tap(f: PcapFile, flt: FrameFilter, end: float) -> Any:
    def tap(now: float, ch: Channel, frame: bytes, event: str) -> None:
        if event == "enqueue" and flt.keep(frame):
            arrival = ch._inflight[-1][0] + ch.delay_s
            if arrival <= end:
                f.write(arrival, frame)

    return tap
