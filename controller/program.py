"""The P4 program's control-plane names, in one place.

Every table, action, parameter, meter and digest name the controller writes
is read from :data:`MCC` (names as P4Info spells them, see
``docs/p4-program.md``).  A rename in ``p4src/`` is one edit here; the
desired-state function, the appliers and the CLI never spell a P4 name.

:func:`check_names` compares these names with a P4Info so drift fails loudly,
naming what is missing.

This module also owns where the program is (:data:`P4_SOURCE`, its includes,
the p4c outputs for BMv2) and its CPU port (:data:`CPU_PORT`); the simulator,
the Mininet runtime and the sweep fingerprint read them from here.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
P4_SOURCE = REPO / "p4src" / "mcc.p4"
P4_INCLUDE = REPO / "p4src" / "include"
BMV2_JSON = REPO / "build" / "mcc.json"
BMV2_P4INFO = REPO / "build" / "mcc.p4info.txtpb"
#: The program's CPU port (``MCC_CPU_PORT`` in ``p4src/include/defs.p4``): packet-in and
#: packet-out to the controller.  Every engine starts its switches with it.
CPU_PORT = 510


@dataclass(frozen=True)
class ProgramNames:
    """Names and sizes of ``p4src/mcc.p4``'s control-plane objects."""

    # Switch-wide configuration: keyless table, set through its default action.
    config_table: str = "MccIngress.switch_config"
    config_action: str = "MccIngress.set_config"
    config_flood_mgid: str = "flood_mgid"
    config_timeout: str = "membership_timeout_us"
    config_refresh: str = "proxy_refresh_us"

    # Unicast forwarding: destination IPv4 (LPM) -> egress port.
    fwd_table: str = "MccIngress.ipv4_fwd"
    fwd_key: str = "dst_addr"
    fwd_action: str = "MccIngress.forward"
    fwd_port: str = "port"
    fwd_drop_action: str = "MccIngress.drop_packet"

    # ARP answered by the switch.
    arp_table: str = "MccIngress.arp_proxy"
    arp_key: str = "hdr.arp.tpa"
    arp_action: str = "MccIngress.arp_reply"
    arp_mac: str = "mac"

    # Group tables: one copy per IGMPv3 record slot, identical entries.
    group_tables: tuple[str, ...] = (
        "MccIngress.record0.groups",
        "MccIngress.record1.groups",
        "MccIngress.record2.groups",
        "MccIngress.record3.groups",
    )
    group_actions: tuple[str, ...] = (
        "MccIngress.record0.set_group",
        "MccIngress.record1.set_group",
        "MccIngress.record2.set_group",
        "MccIngress.record3.set_group",
    )
    group_key: str = "group"
    group_gidx: str = "gidx"
    group_mgid: str = "mgid"
    group_upstream: str = "upstream_port"
    group_has_upstream: str = "has_upstream"

    # Port-set replication groups: a keyless table set through its default action
    # (controller/desired.py, port_set_groups); "" for a program without it.
    port_sets_table: str = "MccIngress.port_sets"
    port_sets_action: str = "MccIngress.set_port_sets"
    port_sets_base: str = "base"
    port_sets_ports: str = "ports"

    # Session assistance: session id (common header) -> mode.
    session_table: str = "MccIngress.sessions"
    session_key: str = "hdr.mcc.session_id"
    aggregate_action: str = "MccIngress.assist_aggregate"
    filter_action: str = "MccIngress.assist_filter"
    none_action: str = "MccIngress.assist_none"
    session_sidx: str = "sidx"
    session_gidx: str = "gidx"
    session_window: str = "window_us"

    # Congestion stamp (egress): each port's rate, and the sessions stamped.
    port_rate_table: str = "MccEgress.port_rate"
    port_rate_key: str = "port"
    port_rate_action: str = "MccEgress.set_port_rate"
    port_rate_units: str = "rate_units"
    port_rate_epoch: str = "epoch_shift"
    # The share estimate's logs (p4src/include/share.p4, controller/share.py).
    share_heavy_table: str = "MccEgress.share_estimate.share_heavy_log"
    share_heavy_key: str = "heavy"
    share_heavy_action: str = "MccEgress.share_estimate.set_heavy_log"
    share_heavy_log: str = "log_n"
    share_heavy_log_more: str = "log_n1"
    share_spread_table: str = "MccEgress.share_estimate.share_collisions"
    share_spread_key: str = "flows"
    share_spread_action: str = "MccEgress.share_estimate.set_spread"
    share_spread_log: str = "log_ratio"
    #: bit/s per ``rate_units`` unit (RFC 4782's 40 kb/s; include/defs.p4)
    stamp_rate_unit_bps: int = 40_000
    stamp_table: str = "MccEgress.stamp_sessions"
    stamp_key: str = "hdr.mcc.session_id"
    stamp_action: str = "MccEgress.stamp"

    # Feedback policing meter (packets), index = ingress port.
    feedback_meter: str = "feedback_meter"

    # Membership-change digest: group, port, event (1 join, 2 leave), members, timestamp.
    membership_digest: str = "membership_digest_t"
    digest_join: int = 1
    digest_leave: int = 2

    # Sizes compiled into the program (include/defs.p4).
    cpu_port: int = CPU_PORT
    member_ports: int = 64
    max_groups: int = 256
    max_sessions: int = 64
    agg_k: int = 32
    port_space: int = 512
    host_table_size: int = 1024  # ipv4_fwd and arp_proxy (include/ingress.p4)

    # PRE group that floods ARP and packet_out(flood=1); session groups follow it.
    flood_mgid: int = 1

    def tables(self) -> list[str]:
        return [self.config_table, self.fwd_table, self.arp_table, *self.group_tables, self.session_table,
                self.port_rate_table, self.stamp_table, self.share_heavy_table, self.share_spread_table, *([self.port_sets_table] if self.port_sets_table else [])]

    def actions(self) -> list[str]:
        return [
            self.config_action, self.fwd_action, self.fwd_drop_action, self.arp_action, *self.group_actions,
            self.aggregate_action, self.filter_action, self.none_action,
            self.port_rate_action, self.stamp_action, self.share_heavy_action, self.share_spread_action, *([self.port_sets_action] if self.port_sets_table else []),
        ]


MCC = ProgramNames()
"""The names of ``p4src/mcc.p4``."""


def check_names(names: ProgramNames, p4info: Any) -> list[str]:
    """Objects in ``names`` that ``p4info`` (a P4Info message) lacks."""
    tables = {t.preamble.name for t in p4info.tables}
    actions = {a.preamble.name for a in p4info.actions}
    meters = {m.preamble.name for m in p4info.meters}
    digests = {d.preamble.name for d in p4info.digests}
    missing = [f"table {t}" for t in names.tables() if t not in tables]
    missing += [f"action {a}" for a in names.actions() if a not in actions]
    if names.feedback_meter and names.feedback_meter not in meters:
        missing.append(f"meter {names.feedback_meter}")
    if names.membership_digest and names.membership_digest not in digests:
        missing.append(f"digest {names.membership_digest}")
    return missing
