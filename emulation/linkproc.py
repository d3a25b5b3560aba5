"""p4mcc's link emulation as a process of its own, between a BMv2 port and its cable.

BMv2 cannot shape its ports, and a kernel without ``netem`` cannot delay or
drop on them.  For such a port the run gives BMv2 one end of an extra veth
pair (``<iface>-bm``) and this process the other (``<iface>-le``) and the
cable's own end (``<iface>``).  Frames BMv2 sends go through the port's
*egress* link (queue, rate, delay, loss: p4switch/linkemu.py, the built-in
switch's own emulation) to the cable; frames arriving from the cable go
through its *ingress* link to BMv2.  So a link on BMv2 behaves as the same
link on the built-in switch, with the same parameters (``--link`` values of
:mod:`emulation.plan`).

    python -m p4mcc.emulation.linkproc --name s1 --wire 1@s1-eth1-le=s1-eth1 \\
        --link 1:egress:rate=10000000bps,delay=20ms,queue=50

It prints ``link emulation ready`` once every port is open, and logs the
links' timing warnings in the format the run collects (``link timing: ...``).
"""

from __future__ import annotations

import argparse
import logging
import random
import signal
import sys
import threading
import time
from dataclasses import dataclass

from p4mcc.p4switch.linkemu import (DIRECTIONS, Link, LinkConfig, LinkConfigError, LinkScheduler, PortConfig,
                                    TimingWatch, change_port_links)
from p4mcc.p4switch.ports import Port, PortError, PortReader

LOG = logging.getLogger("p4mcc.linkproc")
READY_LINE = "link emulation ready"


@dataclass(frozen=True)
class Wire:
    """``PORT@INNER=OUTER``: BMv2's side (via the extra veth) and the cable's side of one port."""

    port: int
    inner: str
    outer: str

    @classmethod
    def parse(cls, text: str) -> "Wire":
        try:
            port_s, ifaces = text.split("@", 1)
            inner, outer = ifaces.split("=", 1)
            port = int(port_s)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected PORT@INNER=OUTER, got {text!r}") from None
        if not inner or not outer:
            raise argparse.ArgumentTypeError(f"expected PORT@INNER=OUTER, got {text!r}")
        return cls(port, inner, outer)


class LinkRelay:
    """Moves frames between the two sides of each wire through the port's emulated links.

    Socket ids: ``2 * port`` is the inner side (BMv2), ``2 * port + 1`` the
    outer side (the cable).  A direction whose link changes nothing is a
    straight copy.
    """

    def __init__(self, wires: list[Wire], links: PortConfig, seed: int = 1) -> None:
        self.sched = LinkScheduler(after=self._report)
        self.timing = TimingWatch()
        self.sides: dict[int, Port] = {}
        self.links: dict[int, Link[bytes]] = {}
        self.drops = 0
        self.config = links
        self._rng = random.Random(seed)
        for w in wires:
            self.sides[2 * w.port] = Port(2 * w.port, w.inner)
            self.sides[2 * w.port + 1] = Port(2 * w.port + 1, w.outer)
            cfg = links.for_port(w.port)
            for what, lc in (("egress", cfg.egress), ("ingress", cfg.ingress)):
                if not lc.is_transparent:
                    self._add_link(w.port, what, lc)
        self.reader = PortReader(list(self.sides.values()), self.on_frame)

    @staticmethod
    def _sid(port: int, direction: str) -> int:
        """From inner (BMv2 sent it) goes the egress link; from outer, the ingress link."""
        return 2 * port + (direction == "ingress")

    def _add_link(self, port: int, direction: str, config: LinkConfig) -> None:
        sid = self._sid(port, direction)
        self.links[sid] = Link(config, self.sched.clock(), random.Random(self._rng.random()))
        name = f"{port}@{self.sides[sid | 1].iface} {direction}"
        self.timing.add_link(name, config.delay_s)
        self.sched.register(str(sid), self._make_cb(sid, name))

    def change_link(self, port: int, direction: str, settings: dict[str, str] | None) -> None:
        """Change a port's link while frames flow (p4switch/linkctl.py); None: back to
        its start-up values.  KeyError: the process does not carry that port."""
        if 2 * port not in self.sides:
            raise KeyError(port)
        sid = {what: self._sid(port, what) for what in DIRECTIONS}
        with self.sched.lock:
            change_port_links({what: self.links.get(s) for what, s in sid.items()}, self.config.for_port(port),
                              direction, settings, self.sched.clock(),
                              add=lambda what, config: self._add_link(port, what, config),
                              wake=lambda what, now: self.sched.wake(str(sid[what]), now))

    def _out(self, sid: int) -> Port:
        return self.sides[sid ^ 1]

    def on_frame(self, sid: int, frame: bytes, now: float) -> None:
        link = self.links.get(sid)
        if link is None:
            self._out(sid).send(frame)
            return
        with self.sched.lock:
            if link.offer(frame, len(frame), now):
                self.sched.wake(str(sid))
            else:
                self.drops += 1

    def _make_cb(self, sid: int, name: str):
        link, out, clock, note = self.links[sid], self._out(sid), self.sched.clock, self.timing.note

        def run(now: float) -> float | None:
            for frame, t in link.advance_timed(now):
                out.send(frame)
                note(name, clock() - t)
            return link.next_event(now)

        return run

    def _report(self) -> None:
        for line in self.timing.report(self.sched.clock()):
            LOG.warning("link timing: %s at %.3f", line, time.time())

    def start(self) -> None:
        self.sched.start()
        self.reader.start()

    def stop(self) -> None:
        self.reader.stop()
        self.sched.stop()
        for p in self.sides.values():
            p.close()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m p4mcc.emulation.linkproc", description=__doc__.split("\n")[0])
    ap.add_argument("--name", default="links", help="the switch these ports belong to (for the log)")
    ap.add_argument("--wire", type=Wire.parse, action="append", default=[], required=True,
                    help="PORT@INNER=OUTER: BMv2's interface side and the cable's side of a port")
    ap.add_argument("--link", action="append", default=[], help="PORT:DIR:key=value,... as p4mcc switch takes")
    ap.add_argument("--seed", type=int, default=1, help="seed of the links' loss draws")
    ap.add_argument("--control", metavar="SOCKET", help="take link changes on this Unix socket (p4switch/linkctl.py)")
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format=f"%(asctime)s {args.name} links %(levelname)s %(message)s",
                        stream=sys.stdout)
    cfg = PortConfig()
    try:
        for flag in args.link:
            cfg = cfg.with_flag(flag)
        relay = LinkRelay(args.wire, cfg, args.seed)
    except (LinkConfigError, PortError) as e:
        print(f"linkproc {args.name}: {e}", file=sys.stderr)
        return 2
    done = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: done.set())
    control = None
    if args.control:
        from p4mcc.p4switch.linkctl import LinkControlServer

        try:
            control = LinkControlServer(args.control, relay.change_link)
        except OSError as e:
            print(f"linkproc {args.name}: {e}", file=sys.stderr)
            return 2
        control.start()
    relay.start()
    print(READY_LINE, flush=True)
    done.wait()
    if control is not None:
        control.stop()
    relay.stop()
    LOG.info("stopped; %d frames dropped by the emulated queues", relay.drops)
    return 0


if __name__ == "__main__":
    sys.exit(main())
