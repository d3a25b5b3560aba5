"""Switch nodes that run the real P4 program through p4switch.

A :class:`P4SwitchNode` wraps one ``p4switch.interp.Switch`` (one compiled
program shared by all nodes: the front end runs once per simulation), or
with ``P4MCC_PIPELINE=native`` its compiled counterpart
(``p4switch.native.NativeSwitch``, same API, same results), and
forwards every frame a link delivers through ``Switch.process(port, frame,
now)``; each returned ``Egress`` goes out on the link at that port.

Configuration has exactly one source: the controller's desired-state
function (``controller.desired.desired_state``) over the same topology (via
``controller.topology.from_scenario_topology``, whose port numbering
``netsim.network`` shares) and the scenario's sessions.  It is written by
the controller's in-process applier (``controller.local.LocalApplier``, the
same one the controller's tests drive), through the interpreter's runtime
API (tables, default actions, PRE groups, clone sessions, meters); digests and
packets to the CPU port are counted and dropped (the data plane keeps join
state itself; no controller runs inside the simulation).

Queue metadata: each egress port's link is the traffic manager's queue
between ingress and egress, drained at the port's rate, as in BMv2's
``simple_switch``.  The interpreter runs egress when a packet is queued, so
the node tells it the backlog the packet finds (``enq_qdepth``, and
``deq_qdepth`` likewise: the packets that will queue behind it are not known
yet) and the time it will wait before it leaves (``deq_timedelta``, in us;
``egress_global_timestamp`` is the arrival time plus that wait).  The
compiled pipeline runs a packet in one native call, so the node writes
every port's answer into the switch's queue table before it: the queues are
FIFOs whose state at the packet's time is known before any replica is sent.
docs/stamp.md lists what differs from BMv2.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from p4mcc.controller.program import CPU_PORT, P4_SOURCE

if TYPE_CHECKING:
    from p4mcc.netsim.engine import Simulator
    from p4mcc.netsim.link import Channel


#: ``P4MCC_SIM_FASTPATH=0`` turns the interpreter's fast path off for every
#: node created afterwards (results must not change; see docs/performance.md)
FASTPATH_ENV = "P4MCC_SIM_FASTPATH"


def fast_path() -> bool:
    return os.environ.get(FASTPATH_ENV, "1").strip() not in ("0", "off", "no", "false")


def pipeline() -> str:
    """The pipeline of nodes created now: ``$P4MCC_PIPELINE`` (``native``, the
    default, or ``interp``, the reference), owned by :mod:`p4mcc.p4switch.native`."""
    from p4mcc.p4switch.native import pipeline_from_env

    return pipeline_from_env()


def new_switch(program: Any, *, seed: int, start_time: float = 0.0) -> Any:
    """One node's switch on the pipeline ``P4MCC_PIPELINE`` names."""
    from p4mcc.p4switch.native import make_switch

    return make_switch(program, pipeline(), cpu_port=CPU_PORT, seed=seed, start_time=start_time,
                       fast=fast_path())


@dataclass
class P4NodeCounters:
    rx: int = 0
    tx: int = 0
    to_cpu: int = 0
    digests: int = 0
    no_link: int = 0


_PROGRAMS: dict[tuple, Any] = {}


def _queue_row(ch: "Channel", now: float) -> tuple[int, int, int]:
    """(enq_qdepth, deq_timedelta in us, deq_qdepth) of a packet queued on ``ch`` now."""
    q, wait = ch.queue_meta(now)
    return q, int(round(wait * 1e6)), q


def _sources_stamp(path: Path) -> tuple:
    """Name, size and modification time of the program and of every file of
    its include directory: what a compiled program depends on."""
    files = [path, *sorted(p for p in (path.parent / "include").rglob("*") if p.is_file())]
    return tuple((str(p.resolve()), st.st_size, st.st_mtime_ns) for p in files for st in (p.stat(),))


def load_program(path: Path = P4_SOURCE) -> Any:
    """Compile the P4 program once (front end), for every node to share; a
    process building several networks of one program compiles it once (the
    compiled program is never modified, and it keys the shared lowering and
    the native module, so every network's nodes share those too)."""
    from p4mcc.p4switch.frontend import compile_file

    key = _sources_stamp(path)
    prog = _PROGRAMS.get(key)
    if prog is None:
        prog = compile_file(str(path), include_dirs=[str(path.parent / "include")])
        if len(_PROGRAMS) >= 4:
            _PROGRAMS.clear()
        _PROGRAMS[key] = prog
    return prog


class P4SwitchNode:
    """A simulated switch whose data plane is the P4 program (see module doc)."""

    is_model = False

    def __init__(self, sim: "Simulator", name: str, program: Any, *, seed: int = 0) -> None:
        self.sim = sim
        self.name = name
        self.program, self.seed = program, seed
        self.ports: dict[int, "Channel"] = {}
        #: the port's first word in the queue table -> its channel, for every
        #: port the table covers (see ``_fill_queue_table``)
        self._qmap: dict[int, "Channel"] = {}
        #: the ports (their first words) whose queue may hold a frame: each
        #: covered channel adds its port when it accepts a frame (``Channel.watch``)
        self._qactive: set[int] = set()
        #: the ports whose row in the queue table is not zero
        self._qbusy: set[int] = set()
        self.counters = P4NodeCounters()
        self.sw = self._wire(new_switch(program, seed=seed))

    def reset(self) -> None:
        """A restarted switch process: a fresh interpreter, no tables, no register state."""
        self.sw = self._wire(new_switch(self.program, seed=self.seed, start_time=self.sim.now))

    def _wire(self, sw: Any) -> Any:
        """``sw`` with this node's queue model and digest counter attached."""
        sw.queue_model = self._queue_model
        sw.on_digest = self._digest
        # the compiled pipeline's outputs as plain tuples; the interpreter's
        # Egress tuples unpack alike; its packets in one native call each,
        # their queue metadata from a table this node fills before each
        native = getattr(sw, "native", False)
        self._qtable = sw.use_queue_table() if native else None
        self._process = sw.process_queued if native else sw.process
        self._qbusy = set()
        self._qactive.update(self._qmap)  # a fresh table: look at every port once
        return sw

    def _digest(self, _d: Any) -> None:
        self.counters.digests += 1

    def _queue_model(self, port: int, now: float) -> tuple[int, int, int]:
        """(enq_qdepth, deq_timedelta in us, deq_qdepth) of a packet queued on ``port`` now."""
        ch = self.ports.get(port)
        if ch is None:
            return 0, 0, 0
        return _queue_row(ch, now)

    def attach(self, port: int, channel: "Channel") -> None:
        from p4mcc.p4switch.native.cbase import QTABLE_PORTS

        self.ports[port] = channel
        if 0 <= port < QTABLE_PORTS:
            i = 3 * port
            self._qmap[i] = channel
            channel.watch, channel.watch_key = self._qactive, i
            self._qactive.add(i)

    def _fill_queue_table(self, now: float) -> None:
        """Every port's ``_queue_model`` answer at ``now`` into the compiled
        pipeline's queue table, as the packet about to run would ask it for
        each replica (no frame is sent between the two).  A queue whose last
        departure is not after ``now`` is empty: its row is zero, written
        only when it was not.  A busy port's row is ``_queue_row``'s, made
        here from ``Channel.queue_meta``'s answer: this runs before every
        packet.

        Only the ports a frame was queued on since their queue was last seen
        empty are looked at (``_qactive``): a queue fills only through
        ``Channel.send``, which names its port there, and most of a switch's
        ports are idle at any instant."""
        active = self._qactive
        if not active:
            return
        qt, busy, qmap = self._qtable, self._qbusy, self._qmap
        idle = []
        for i in active:
            waiting, wait = qmap[i].queue_meta(now)
            if wait > 0.0:
                qt[i] = qt[i + 2] = waiting
                qt[i + 1] = round(wait * 1e6)
                busy.add(i)
            else:
                idle.append(i)
                if i in busy:
                    qt[i] = qt[i + 1] = qt[i + 2] = 0
                    busy.discard(i)
        if idle:
            active.difference_update(idle)

    def receive(self, port: int, frame: bytes) -> None:
        c = self.counters
        c.rx += 1
        now = self.sim.now
        if self._qactive and self._qtable is not None:
            self._fill_queue_table(now)
        outs = self._process(port, frame, now)
        if not outs:
            return
        get = self.ports.get
        for out_port, data, _ in outs:
            if out_port == CPU_PORT:
                c.to_cpu += 1
                continue
            ch = get(out_port)
            if ch is None:
                c.no_link += 1
                continue
            c.tx += 1
            ch.send(data)


def configure(nodes: dict[str, P4SwitchNode], topology: Any, sessions: list[Any],
              options: Any = None) -> Any:
    """Apply the controller's desired state for ``sessions`` to every node;
    returns the controller's plan (``controller.desired.Plan``: each switch's
    ``SwitchState`` and the switches below each one) for restores after a restart."""
    from p4mcc.controller.desired import DesiredOptions, plan, session_from_scenario
    from p4mcc.controller.local import LocalApplier
    from p4mcc.controller.topology import from_scenario_topology

    options = options or DesiredOptions()
    ctopo = from_scenario_topology(topology)
    want = plan(ctopo, [session_from_scenario(s) for s in sessions], options)
    for name, node in nodes.items():
        LocalApplier(node.sw, name).sync(want.switches[name])
    return want
