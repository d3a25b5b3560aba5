"""The switch process: ports, link emulation, interpreter and P4Runtime.

Threads:

* the **port reader** receives frames from every port's raw socket;
* the **link scheduler** runs per-port link emulation (ingress links before
  the pipeline, egress queues and wires after it) on a monotonic clock;
* the **gRPC** pool serves P4Runtime; PacketOut enters the pipeline from
  there.

Every packet is processed under the device lock, so control-plane batches
land between packets.  A port whose interface disappears is lost on its own
(one log line; see :mod:`.ports`): the other ports and the server go on.  Packets the program sends to the CPU port become
PacketIn on the primary client's stream.
"""

from __future__ import annotations

import logging
import os
import random
import signal
import sys
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from typing import Any, Callable

from finsy.proto import p4i, p4r

from .native import pipeline_from_env
from .linkemu import (Link, LinkConfig, LinkScheduler, PortConfig, ShapedQueue, TimingWatch, Wire, change_port_links,
                      departure_time)
from .p4rt.device import Device, compile_device_config
from .p4rt.errors import Code, P4RTError
from .ports import Port, PortReader

LOG = logging.getLogger("p4mcc.p4switch")
PKT_LOG = logging.getLogger("p4mcc.p4switch.packets")


@dataclass
class _EgressPort:
    port: Port
    queue: ShapedQueue[bytes] | None
    wire: Wire[bytes] | None

    def link(self) -> "_EgressPort | None":
        """The port as its egress link (queue and wire), or None when it has none yet."""
        return self if self.queue is not None and self.wire is not None else None

    @property
    def config(self) -> LinkConfig:
        assert self.queue is not None
        return self.queue.config

    def reconfigure(self, config: LinkConfig, now: float) -> None:
        """``config`` from ``now`` on, for the queue and the wire alike (as :meth:`Link.reconfigure`)."""
        assert self.queue is not None and self.wire is not None
        self.queue.reconfigure(config, now)
        self.wire.reconfigure(config)


@dataclass
class DataplaneStats:
    rx: int = 0
    tx: int = 0
    no_port: int = 0
    queue_drops: int = 0
    link_losses: int = 0
    packet_in: int = 0
    packet_out: int = 0
    no_pipeline: int = 0


class Dataplane:
    """Moves frames between ports, link emulation and the interpreter."""

    def __init__(self, device: Device, ports: dict[int, Port], links: PortConfig,
                 packet_in: Callable[[bytes], None] | None = None, seed: int | None = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.device = device
        self.ports = ports
        self.links = links
        self.packet_in = packet_in
        self.clock = clock
        self.epoch = clock()
        self.sched = LinkScheduler(clock, after=self.drain_ingress)
        #: how late frames leave against their emulated departure instants
        self.timing = TimingWatch()
        self._ready: deque[tuple[int, bytes, float]] = deque()
        self.stats = DataplaneStats()
        self._frame_size: int | None = None
        self._trace: list[str] = []
        self.log_packets = PKT_LOG.isEnabledFor(logging.DEBUG)
        self._rng = random.Random(seed)
        self._ingress: dict[int, Link[bytes]] = {}
        self._egress: dict[int, _EgressPort] = {}
        for n, port in ports.items():
            cfg = links.for_port(n)
            self._egress[n] = _EgressPort(port, None, None)
            if not cfg.ingress.is_transparent:
                self._add_ingress_link(n, cfg.ingress)
            if not cfg.egress.is_transparent:
                self._add_egress_link(n, cfg.egress)
        device.on_pipeline.append(self._on_pipeline)
        if device.pipeline is not None:
            self._on_pipeline(device.pipeline)

    def _add_ingress_link(self, n: int, config: LinkConfig) -> None:
        self._ingress[n] = Link(config, self.epoch, random.Random(self._rng.random()))
        self.sched.register(f"in{n}", self._make_ingress_cb(n))

    def _add_egress_link(self, n: int, config: LinkConfig) -> None:
        port = self._egress[n].port
        self._egress[n] = _EgressPort(port, ShapedQueue(config, self.epoch),
                                      Wire(config, random.Random(self._rng.random())))
        self.sched.register(f"eg{n}", self._make_egress_cb(n))
        self.timing.add_link(f"{n}@{port.iface} egress", config.delay_s)

    def change_link(self, port: int, direction: str, settings: dict[str, str] | None,
                    now: float | None = None) -> None:
        """Change a port's emulated link while frames flow (:mod:`p4switch.linkctl`).

        ``settings`` (``--link`` keys) change what they name, from ``now``
        on; None puts the direction back to its start-up values.  A port
        that started transparent gets its link here.  KeyError: no such port.
        """
        if port not in self._egress:
            raise KeyError(port)
        add = {"ingress": self._add_ingress_link, "egress": self._add_egress_link}
        timer = {"ingress": f"in{port}", "egress": f"eg{port}"}
        with self.sched.lock:
            change_port_links({"ingress": self._ingress.get(port), "egress": self._egress[port].link()},
                              self.links.for_port(port), direction, settings,
                              self.clock() if now is None else now,
                              add=lambda what, config: add[what](port, config),
                              wake=lambda what, t: self.sched.wake(timer[what], t))

    def start(self) -> None:
        self.sched.start()

    def stop(self) -> None:
        self.sched.stop()

    def _on_pipeline(self, pipeline: Any) -> None:
        sw = pipeline.switch
        try:
            sw.queue_model = self._queue_model
        except AttributeError:
            pass
        if self.log_packets:
            self._trace_tables(sw)

    def _trace_tables(self, sw: Any) -> None:
        """Record every table lookup of the packet being logged (debug logging only).

        The interpreter calls ``table.lookup(key)`` on its table objects at
        run time, so an instance-level wrapper sees each apply; it exists only
        when per-packet logging is on, so the fast path stays untouched.
        """
        for name, table in getattr(sw, "tables", {}).items():
            inner = table.lookup

            def traced(key: Any, _inner: Any = inner, _name: str = name) -> Any:
                entry = _inner(key)
                self._trace.append(f"{_name} {'hit -> ' + entry.action if entry is not None else 'miss -> default'}")
                return entry

            table.lookup = traced

    def _queue_model(self, port: int, now: float) -> tuple[int, int, int]:
        """(enq_qdepth, deq_timedelta_us, deq_qdepth) for a packet bound to ``port``.

        The interpreter runs egress before the packet is queued, so
        ``deq_timedelta`` is the wait predicted at enqueue -- exact for a
        token-bucket FIFO when the program keeps the frame length -- and
        ``deq_qdepth`` is the backlog the packet found (the packets behind it
        are not known yet).
        """
        ep = self._egress.get(port)
        if ep is None or ep.queue is None:
            return 0, 0, 0
        with self.sched.lock:
            depth, wait = ep.queue.predict(now, self._frame_size)
        return depth, int(round(wait * 1e6)), depth

    # -- ingress -------------------------------------------------------------

    def receive(self, port: int, frame: bytes, now: float) -> None:
        """A frame arrived on ``port`` (port reader thread)."""
        self.stats.rx += 1
        link = self._ingress.get(port)
        if link is None:
            self.process(port, frame, now)
            return
        with self.sched.lock:
            if link.offer(frame, len(frame), now):
                self.sched.wake(f"in{port}")
            else:
                self.stats.queue_drops += 1

    def _make_ingress_cb(self, port: int) -> Callable[[float], float | None]:
        link = self._ingress[port]

        def run(now: float) -> float | None:
            # Runs under the scheduler lock: hand the frames over, process them later,
            # each at the instant the link delivered it (not when this ran).
            for frame, t in link.advance_timed(now):
                self._ready.append((port, frame, t))
            return link.next_event(now)

        return run

    def drain_ingress(self) -> None:
        """Process the frames ingress links have released (outside the scheduler lock)."""
        while self._ready:
            port, frame, now = self._ready.popleft()
            self.process(port, frame, now)
        for line in self.timing.report(self.clock()):
            # the run reads these lines back (emulation/run.py, link_timing events)
            LOG.warning("link timing: %s at %.3f", line, time.time())

    def pump(self, now: float) -> None:
        """Run link emulation due by ``now`` and its consequences (tests drive this)."""
        self.sched.run_due(now)
        self.drain_ingress()

    def process(self, port: int, frame: bytes, now: float) -> None:
        """Run one frame through the pipeline and send what comes out."""
        dev = self.device
        with dev.packet_turn():
            p = dev.pipeline
            if p is None:
                self.stats.no_pipeline += 1
                return
            # The queue model sizes the packet's own token wait by the frame
            # that entered (exact unless the program changes the length).
            self._frame_size = len(frame)
            if self.log_packets:
                self._trace = []
            outs = p.switch.process(port, frame, now)
            if self.log_packets:
                PKT_LOG.debug(
                    "port %d: %d bytes in%s -> %s", port, len(frame),
                    "".join(f"; {t}" for t in self._trace),
                    ", ".join(f"port {o.port} ({len(o.data)} B)" for o in outs) or "dropped",
                )
        cpu = dev.cpu_port
        for o in outs:
            if cpu is not None and o.port == cpu:
                self.stats.packet_in += 1
                if self.packet_in is not None:
                    self.packet_in(o.data)
            else:
                self.transmit(o.port, o.data, now)

    def inject(self, frame: bytes) -> None:
        """A PacketOut frame (``packet_out`` header + payload) entering at the CPU port."""
        self.stats.packet_out += 1
        cpu = self.device.cpu_port
        if cpu is not None:
            self.process(cpu, frame, self.clock())

    # -- egress --------------------------------------------------------------

    def transmit(self, port: int, frame: bytes, now: float) -> None:
        ep = self._egress.get(port)
        if ep is None:
            self.stats.no_port += 1
            return
        if ep.queue is None:
            if ep.port.send(frame):
                self.stats.tx += 1
            return
        with self.sched.lock:
            if ep.queue.enqueue(frame, len(frame), now):
                self.sched.wake(f"eg{port}")
            else:
                self.stats.queue_drops += 1

    def _make_egress_cb(self, port: int) -> Callable[[float], float | None]:
        ep = self._egress[port]
        assert ep.queue is not None and ep.wire is not None
        q, wire = ep.queue, ep.wire
        name = f"{port}@{ep.port.iface} egress"
        clock, note = self.clock, self.timing.note

        def run(now: float) -> float | None:
            for frame, meta in q.dequeue(now):
                if not wire.send(frame, departure_time(meta, q.epoch)):
                    self.stats.link_losses += 1
            for frame, t in wire.receive_timed(now):
                if ep.port.send(frame):
                    self.stats.tx += 1
                note(name, clock() - t)
            times = [t for t in (q.next_departure(now), wire.next_arrival()) if t is not None]
            return min(times) if times else None

        return run


# ---------------------------------------------------------------------------
# Pipeline building
# ---------------------------------------------------------------------------


def make_builder(default_program: Any, cpu_port: int | None, seed: int = 0,
                 start_time: float | None = None,
                 cache: Any = None) -> Callable[[p4r.ForwardingPipelineConfig], tuple[Any, Any, p4i.P4Info]]:
    """The Device's pipeline builder: compile (or reuse) a program, lower it, describe it.

    With a :class:`~.pipecache.PipelineCache` a device config compiled
    before (by this switch or one that ran with the same cache directory) is
    not compiled again, and a spare instance built ahead is used once.
    """
    t0 = time.monotonic() if start_time is None else start_time

    def build(config: p4r.ForwardingPipelineConfig) -> tuple[Any, Any, p4i.P4Info]:
        from .p4rt.p4info import P4InfoError, build_p4info

        key = None
        if config.p4_device_config and cache is not None:
            key, program = cache.program(config.p4_device_config, compile_device_config)
        elif config.p4_device_config:
            program = compile_device_config(config.p4_device_config)
        elif default_program is not None:
            program = default_program
        else:
            raise P4RTError(Code.INVALID_ARGUMENT,
                            "no device config given and the switch was started without a program")
        check_cpu_port(program, cpu_port)
        try:
            generated = build_p4info(program)
        except P4InfoError as e:
            raise P4RTError(Code.INVALID_ARGUMENT, f"cannot describe the program in P4Info: {e}") from None
        switch = cache.take_spare(key) if key is not None else None
        if switch is None:
            switch = new_switch(program, cpu_port, seed, t0)
        return switch, program, generated

    return build


def program_cpu_port(program: Any) -> tuple[int, str] | None:
    """The CPU port a program declares (a top-level ``const ... CPU_PORT = N``)
    and where, or None.  A program sends PacketIn to that port and parses
    PacketOut from it, so the switch's ``--cpu-port`` has to be the same."""
    for d in getattr(program, "decls", ()):
        if type(d).__name__ == "ConstDecl" and str(getattr(d, "name", "")).upper() == "CPU_PORT":
            value = getattr(getattr(d, "value", None), "value", None)
            if isinstance(value, int):
                span = getattr(d, "span", None)
                where = f"{span.file}:{span.line}" if span is not None else "the program"
                return value, where
    return None


def check_cpu_port(program: Any, cpu_port: int | None) -> None:
    """Refuse a ``--cpu-port`` the program does not use (P4RTError INVALID_ARGUMENT).

    With a mismatch nothing reaches the controller and IGMP queries the
    controller sends never leave the switch; say so at start instead.
    """
    declared = program_cpu_port(program)
    if declared is None or cpu_port is None or declared[0] == cpu_port:
        return
    raise P4RTError(Code.INVALID_ARGUMENT,
                    f"--cpu-port {cpu_port} does not match the program's CPU_PORT {declared[0]} ({declared[1]}): "
                    f"start the switch with --cpu-port {declared[0]}")


#: the pipeline every switch of this process runs (``--pipeline``): ``interp``
#: is the reference, ``native`` the compiled module (p4switch/native)
PIPELINE = {"name": "native"}


def new_switch(program: Any, cpu_port: int | None, seed: int, start_time: float) -> Any:
    from .native import make_switch

    pipeline = PIPELINE["name"]
    if pipeline == "native" and PKT_LOG.isEnabledFor(logging.DEBUG):
        # the per-packet log lists each table's outcome, which only the
        # interpreter's lookups can report (Dataplane._trace_tables)
        LOG.warning("per-packet debug logging traces table lookups: running the interpreter")
        pipeline = "interp"
    try:
        return make_switch(program, pipeline, cpu_port=cpu_port, start_time=start_time, seed=seed)
    except Exception as e:  # UnsupportedError and friends: the program cannot run here
        raise P4RTError(Code.INVALID_ARGUMENT, f"the program cannot run on this switch: {e}") from None


# ---------------------------------------------------------------------------
# The process
# ---------------------------------------------------------------------------


@dataclass
class SwitchOptions:
    """Everything ``p4mcc switch`` was told on its command line."""

    interfaces: list[tuple[int, str]] = field(default_factory=list)
    device_id: int = 0
    grpc_addr: str = "127.0.0.1:9559"
    cpu_port: int | None = None
    program: str | None = None
    include_dirs: list[str] = field(default_factory=list)
    defines: dict[str, str] = field(default_factory=dict)
    pcap_dir: str | None = None
    links: PortConfig = field(default_factory=PortConfig)
    p4info_out: str | None = None
    seed: int = 0
    #: directory of compiled pipelines shared by restarts (p4switch/pipecache.py)
    pipeline_cache: str | None = None
    #: warm up, then wait for "go" on stdin before opening ports and serving
    standby: bool = False
    #: ``interp`` or ``native`` (see ``new_switch``)
    pipeline: str = "native"
    #: Unix socket taking link changes while the switch runs (None: none)
    link_control: str | None = None


class SwitchProcess:
    """Owns every part of a running switch; ``run()`` blocks until a signal."""

    def __init__(self, opts: SwitchOptions) -> None:
        self.opts = opts
        PIPELINE["name"] = opts.pipeline
        self.stop_event = threading.Event()
        self.ports: dict[int, Port] = {}
        self.server: Any = None
        self.servicer: Any = None
        self.bound_port = 0

    def warm(self) -> None:
        """Everything that takes CPU before the switch can serve: the start
        program's compilation and the pipeline cache's programs, each with a
        spare instance (a standby does this before it is told to go)."""
        if getattr(self, "_warm", False):
            return
        self._warm = True
        o = self.opts
        self.t0 = time.monotonic()
        self.program = None
        if o.program:
            from .frontend import compile_file

            self.program = compile_file(o.program, include_dirs=o.include_dirs, defines=o.defines)
        self.cache = None
        if o.pipeline_cache:
            from .p4rt.server import serve  # noqa: F401 - imported now, not after "go"
            from .pipecache import PipelineCache

            self.cache = PipelineCache(o.pipeline_cache)
            n = self.cache.preload(lambda prog: (check_cpu_port(prog, o.cpu_port),
                                                 new_switch(prog, o.cpu_port, o.seed, self.t0))[1])
            LOG.info("pipeline cache %s: %d compiled pipeline(s) loaded", o.pipeline_cache, n)

    def start(self) -> None:
        from .p4rt.server import serve

        o = self.opts
        self.warm()
        program = self.program
        try:
            for n, iface in o.interfaces:
                self.ports[n] = Port(n, iface, o.pcap_dir)
            builder = make_builder(program, o.cpu_port, o.seed, start_time=self.t0, cache=self.cache)
            self.device = Device(o.device_id, builder, cpu_port=o.cpu_port)
            if program is not None:
                self.device.commit_initial()
                if o.p4info_out:
                    from .p4rt.p4info import write_p4info

                    write_p4info(program, o.p4info_out)
            self.dataplane = Dataplane(self.device, self.ports, o.links, seed=o.seed)
            self.server, self.servicer, self.bound_port = serve(self.device, o.grpc_addr, inject=self.dataplane.inject)
            self.dataplane.packet_in = self.servicer.packet_in
            if o.link_control:
                from .linkctl import LinkControlServer

                self.link_control = LinkControlServer(o.link_control, self.dataplane.change_link)
                self.link_control.start()
            self.dataplane.start()
            self.reader = PortReader(list(self.ports.values()), self.dataplane.receive)
            self.reader.start()
        except BaseException:
            self.close()
            raise

    def close(self) -> None:
        if getattr(self, "link_control", None) is not None:
            self.link_control.stop()
            self.link_control = None
        if getattr(self, "reader", None) is not None:
            self.reader.stop()
            self.reader = None
        if self.servicer is not None:
            self.servicer.close()
        if self.server is not None:
            self.server.stop(grace=0.5).wait(2)
            self.server = None
        if getattr(self, "dataplane", None) is not None:
            self.dataplane.stop()
        for p in self.ports.values():
            p.close()
        self.ports = {}

    def run(self) -> int:
        """Start, announce readiness, wait for SIGTERM/SIGINT, stop cleanly."""
        # Link emulation needs its thread to wake on time: with CPython's
        # default 5 ms GIL switch interval a busy packet thread would delay
        # departures by up to 5 ms each.
        sys.setswitchinterval(0.0002)
        if self.opts.standby:
            # a standby replaces a switch that died: ready to take its ports
            # and address the moment it is told (a closed stdin means never)
            self.warm()
            print(f"p4mcc switch: device {self.opts.device_id} standby, waiting for 'go' on stdin", flush=True)
            if sys.stdin.readline().strip() != "go":
                return 0
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, lambda *_: self.stop_event.set())
        self.start()
        host = self.opts.grpc_addr.rsplit(":", 1)[0]
        print(f"p4mcc switch: device {self.opts.device_id} serving P4Runtime on {host}:{self.bound_port}, "
              f"ports {', '.join(f'{n}@{p.iface}' for n, p in sorted(self.ports.items())) or 'none'}",
              flush=True)
        ports = list(self.ports.values())
        try:
            self.stop_event.wait()
        finally:
            self.close()
            s = self.dataplane.stats
            lost = [p for p in ports if p.lost is not None]
            for name, acc in sorted(self.dataplane.timing.total.items()):
                if acc.count:
                    LOG.info("link timing over the run: %s", TimingWatch.describe(name, acc))
            LOG.info("stopped: rx %d tx %d queue drops %d link losses %d; ports lost: %s (%d frames not sent to them)",
                     s.rx, s.tx, s.queue_drops, s.link_losses,
                     ", ".join(f"{p.port}@{p.iface}" for p in lost) or "none", sum(p.tx_lost for p in ports))
        return 0


def main_with(opts: SwitchOptions) -> int:
    """Run the switch; start-up failures are one clear line and exit status 1."""
    from .frontend.errors import P4Error

    try:
        return SwitchProcess(opts).run()
    except P4RTError as e:
        print(f"p4mcc switch: {e.message}", file=sys.stderr)
    except P4Error as e:
        print(e.format() if hasattr(e, "format") else str(e), file=sys.stderr)
    except (OSError, ValueError) as e:  # missing interface, no permission, address in use
        print(f"p4mcc switch: {e}", file=sys.stderr)
    return 1


_LEVELS = {"trace": logging.DEBUG, "debug": logging.DEBUG, "info": logging.INFO,
           "warn": logging.WARNING, "error": logging.ERROR, "off": logging.CRITICAL + 10}


def setup_logging(console: bool, log_file: str | None, level: str) -> None:
    """Logging as BMv2 does it: nothing unless --log-console/--log-file; then ``level``."""
    root = logging.getLogger("p4mcc.p4switch")
    root.handlers.clear()
    root.propagate = False
    if not console and not log_file:
        root.setLevel(logging.WARNING)
        root.addHandler(logging.StreamHandler(sys.stderr))
        return
    fmt = logging.Formatter("[%(asctime)s.%(msecs)03d] [%(name)s] %(message)s", "%H:%M:%S")
    root.setLevel(_LEVELS[level])
    if console:
        h = logging.StreamHandler(sys.stderr)
        h.setFormatter(fmt)
        root.addHandler(h)
    if log_file:
        fh = logging.FileHandler(log_file)
        fh.setFormatter(fmt)
        root.addHandler(fh)


def options_from_args(args: Any) -> SwitchOptions:
    """Validate the parsed command line into :class:`SwitchOptions` (ValueError on bad input)."""
    from .linkemu import LinkConfigError, load_port_config
    from .ports import PortSpec

    if args.program and args.no_p4:
        raise ValueError("give a program or --no-p4, not both")
    interfaces = []
    seen: set[int] = set()
    for text in args.interface:
        spec = PortSpec.parse(text)
        if spec.port in seen:
            raise ValueError(f"port {spec.port} is given twice")
        seen.add(spec.port)
        interfaces.append((spec.port, spec.iface))
    if args.cpu_port is not None and args.cpu_port in seen:
        raise ValueError(f"CPU port {args.cpu_port} is also attached to an interface")
    if args.cpu_port is not None and not 0 <= args.cpu_port <= 511:
        raise ValueError(f"--cpu-port {args.cpu_port} is outside 0..511 (v1model ports are 9 bits)")
    from .p4rt.server import parse_address

    parse_address(args.grpc_server_addr)
    links = PortConfig()
    try:
        if args.port_config:
            import yaml

            with open(args.port_config, encoding="utf-8") as f:
                links = load_port_config(yaml.safe_load(f))
        for text in args.link:
            links = links.with_flag(text)
    except (LinkConfigError, OSError) as e:
        raise ValueError(f"link emulation: {e}") from None
    except Exception as e:  # YAML syntax errors
        raise ValueError(f"--port-config {args.port_config}: {e}") from None
    defines = {}
    for d in args.define:
        k, _, v = d.partition("=")
        defines[k] = v or "1"
    setup_logging(args.log_console, args.log_file, args.log_level)
    return SwitchOptions(
        interfaces=interfaces, device_id=args.device_id, grpc_addr=args.grpc_server_addr, cpu_port=args.cpu_port,
        program=args.program, include_dirs=args.include, defines=defines, pcap_dir=args.pcap, links=links,
        p4info_out=args.p4info, seed=args.seed, pipeline_cache=args.pipeline_cache, standby=args.standby,
        pipeline=args.pipeline or pipeline_from_env(), link_control=getattr(args, "link_control", None),
    )
