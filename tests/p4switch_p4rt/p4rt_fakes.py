"""An in-memory stand-in for the interpreter's runtime API (docs/p4switch-api.md).

It keeps exactly the state the API describes (entries by handle, defaults,
PRE groups, clone sessions, counters, meters, registers) so the P4Runtime
layer can be tested against the API contract alone, and it "forwards" a
packet by the first byte of the frame (the egress port) so packet-in/out
paths can be exercised without the interpreter.
"""

from __future__ import annotations

from collections import namedtuple
from dataclasses import dataclass

from google.protobuf import text_format

from finsy.proto import p4i
from p4mcc.p4switch.runtime.tables import TableError

Egress = namedtuple("Egress", "port data instance_type")


@dataclass
class Entry:
    handle: int
    keys: tuple
    action: str
    params: tuple
    priority: int | None = None
    is_const: bool = False


@dataclass
class Digest:
    name: str
    fields: dict
    time: float


P4INFO_TEXT = """
pkg_info { arch: "v1model" }
tables {
  preamble { id: 33554433 name: "MyIngress.fwd" alias: "fwd" }
  match_fields { id: 1 name: "hdr.ethernet.dstAddr" bitwidth: 48 match_type: EXACT }
  action_refs { id: 16777217 }
  action_refs { id: 16777218 }
  action_refs { id: 16777219 scope: DEFAULT_ONLY }
  direct_resource_ids: 318767105
  size: 4
}
tables {
  preamble { id: 33554434 name: "MyIngress.acl" alias: "acl" }
  match_fields { id: 1 name: "hdr.ipv4.srcAddr" bitwidth: 32 match_type: TERNARY }
  match_fields { id: 2 name: "hdr.ipv4.dstAddr" bitwidth: 32 match_type: LPM }
  action_refs { id: 16777217 }
  action_refs { id: 16777218 }
  size: 1024
}
tables {
  preamble { id: 33554435 name: "MyIngress.fixed" alias: "fixed" }
  match_fields { id: 1 name: "hdr.ipv4.protocol" bitwidth: 8 match_type: EXACT }
  action_refs { id: 16777218 }
  action_refs { id: 16777217 }
  const_default_action_id: 16777218
  size: 1024
  is_const_table: true
  has_initial_entries: true
}
actions { preamble { id: 16777217 name: "MyIngress.forward" alias: "forward" }
  params { id: 1 name: "port" bitwidth: 9 } }
actions { preamble { id: 16777218 name: "MyIngress.drop" alias: "drop" } }
actions { preamble { id: 16777219 name: "MyIngress.to_cpu" alias: "to_cpu" } }
counters { preamble { id: 302120961 name: "MyIngress.pkts" alias: "pkts" } spec { unit: BOTH } size: 8 }
direct_counters { preamble { id: 318767105 name: "MyIngress.fwd_hits" alias: "fwd_hits" }
  spec { unit: BOTH } direct_table_id: 33554433 }
meters { preamble { id: 335544321 name: "MyIngress.police" alias: "police" } spec { unit: BYTES } size: 4 }
registers { preamble { id: 369098753 name: "MyIngress.state" alias: "state" }
  type_spec { bitstring { bit { bitwidth: 16 } } } size: 8 }
digests { preamble { id: 385875969 name: "learn_t" alias: "learn_t" } type_spec { struct { name: "learn_t" } } }
controller_packet_metadata { preamble { id: 67146229 name: "packet_in" alias: "packet_in" }
  metadata { id: 1 name: "ingress_port" bitwidth: 9 } metadata { id: 2 name: "_pad" bitwidth: 7 } }
controller_packet_metadata { preamble { id: 67121543 name: "packet_out" alias: "packet_out" }
  metadata { id: 1 name: "egress_port" bitwidth: 9 } metadata { id: 2 name: "_pad" bitwidth: 7 } }
type_info { structs { key: "learn_t" value {
  members { name: "mac" type_spec { bitstring { bit { bitwidth: 48 } } } }
  members { name: "port" type_spec { bitstring { bit { bitwidth: 9 } } } } } } }
"""


def sample_p4info() -> p4i.P4Info:
    return text_format.Parse(P4INFO_TEXT, p4i.P4Info())


class FakeSwitch:
    """The runtime API surface the P4Runtime server uses, backed by dicts."""

    KINDS = {
        "MyIngress.fwd": ["exact"],
        "MyIngress.acl": ["ternary", "lpm"],
        "MyIngress.fixed": ["exact"],
    }
    DEFAULTS = {"MyIngress.fwd": ("MyIngress.drop", ()), "MyIngress.acl": ("MyIngress.drop", ()),
                "MyIngress.fixed": ("MyIngress.drop", ())}
    PARAMS = {"MyIngress.forward": ["port"], "MyIngress.drop": [], "MyIngress.to_cpu": []}

    def __init__(self, cpu_port: int | None = None) -> None:
        self.cpu_port = cpu_port
        self.on_digest = None
        self.queue_model = None
        self.tables: dict[str, dict[int, Entry]] = {t: {} for t in self.KINDS}
        self.tables["MyIngress.fixed"][0] = Entry(0, (_Exact(6),), "MyIngress.forward", (3,), None, True)
        self.defaults = dict(self.DEFAULTS)
        self.next_handle = 1
        self.groups: dict[int, list] = {}
        self.sessions: dict[int, tuple] = {}
        self.counters = {i: (0, 0) for i in range(8)}
        self.direct = {}
        self.meters: dict[int, list] = {}
        self.direct_meters: dict[tuple, list] = {}
        self.registers = {i: 0 for i in range(8)}
        self.processed: list[tuple[int, bytes]] = []

    # tables
    def _keys(self, table, keys):
        out = []
        for name in [f for f in _FIELD_NAMES[table]]:
            out.append(keys.get(name))
        return tuple(out)

    def table_add(self, table, keys, action, params=(), priority=None):
        if table not in self.tables:
            raise KeyError(table)
        k = self._keys(table, keys)
        for e in self.tables[table].values():
            if e.keys == k and e.priority == priority:
                raise TableError("duplicate entry")
        h = self.next_handle
        self.next_handle += 1
        self.tables[table][h] = Entry(h, k, action, tuple(params[p] for p in self.PARAMS[action]), priority)
        self.direct[(table, h)] = (0, 0)
        return h

    def table_modify(self, table, handle, action, params=()):
        e = self.tables[table][handle]
        if e.is_const:
            raise TableError("const entry")
        e.action, e.params = action, tuple(params[p] for p in self.PARAMS[action])

    def table_delete(self, table, handle):
        if self.tables[table][handle].is_const:
            raise TableError("const entry")
        del self.tables[table][handle]

    def table_entries(self, table):
        return list(self.tables[table].values())

    def table_set_default(self, table, action, params=()):
        self.defaults[table] = (action, tuple(params[p] for p in self.PARAMS[action]))

    def table_get_default(self, table):
        return self.defaults[table]

    def table_reset_default(self, table):
        self.defaults[table] = self.DEFAULTS[table]

    # stateful
    def counter_read(self, name, index):
        return self.counters[index]

    def counter_write(self, name, index, packets, nbytes):
        self.counters[index] = (packets, nbytes)

    def direct_counter_read(self, table, handle):
        return self.direct.get((table, handle), (0, 0))

    def direct_counter_write(self, table, handle, packets, nbytes):
        self.direct[(table, handle)] = (packets, nbytes)

    def meter_set_rates(self, name, index, rates):
        self.meters[index] = list(rates)

    def meter_reset(self, name, index):
        self.meters.pop(index, None)

    def direct_meter_set_rates(self, table, handle, rates):
        self.direct_meters[(table, handle)] = list(rates)

    def register_read(self, name, index):
        return self.registers[index]

    def register_write(self, name, index, value):
        if value >> 16:
            raise ValueError("does not fit")
        self.registers[index] = value

    # PRE
    def set_multicast_group(self, mgid, replicas):
        self.groups[mgid] = list(replicas)

    def delete_multicast_group(self, mgid):
        del self.groups[mgid]

    def set_clone_session(self, session, replicas, packet_length=0):
        self.sessions[session] = (list(replicas), packet_length)

    def mirroring_delete(self, session):
        del self.sessions[session]

    # packets: first byte is the egress port; port 0xff means "to the CPU port"
    def process(self, port, data, now=0.0):
        self.processed.append((port, data))
        if not data:
            return []
        if port == self.cpu_port:
            # strip the 2-byte packet_out header; its first 9 bits are the egress port
            eg = int.from_bytes(data[:2], "big") >> 7
            return [Egress(eg, data[2:], 0)]
        if data[0] == 0xFF and self.cpu_port is not None:
            hdr = (port << 7).to_bytes(2, "big")
            return [Egress(self.cpu_port, hdr + data, 0)]
        if data[0] == 0xFE and self.on_digest is not None:
            self.on_digest(Digest("learn_t", {"mac": int.from_bytes(data[1:7], "big"), "port": port}, now))
            return []
        return [Egress(data[0], data, 0)]


@dataclass(frozen=True)
class _Exact:
    value: int


_FIELD_NAMES = {
    "MyIngress.fwd": ["hdr.ethernet.dstAddr"],
    "MyIngress.acl": ["hdr.ipv4.srcAddr", "hdr.ipv4.dstAddr"],
    "MyIngress.fixed": ["hdr.ipv4.protocol"],
}


def fake_builder(cpu_port=None):
    """A Device pipeline builder that ignores the device config and returns a FakeSwitch."""
    made = []

    def build(config):
        sw = FakeSwitch(cpu_port)
        made.append(sw)
        return sw, None, sample_p4info()

    build.made = made  # type: ignore[attr-defined]
    return build
