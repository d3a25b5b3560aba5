"""WEBRC's sender and its channels (paper 3, Fig. 1; RFC 3738 4): no feedback and no
named rule; the channels and their rates: ``docs/protocols/webrc.md#the-sender``."""

from __future__ import annotations

import ipaddress
import math
import struct
from typing import Any, Callable

from p4mcc.hosts import wire
from p4mcc.hosts.core import Address
from p4mcc.hosts.registry import SessionConfig, SessionEndpoint, params_from_dict
from p4mcc.hosts.webrc.params import DATA_HEADER, WebrcParams
from p4mcc.hosts.wire import WEBRC_LAST_PSN, WebrcData, WireError, ts_us


def _field_offsets() -> dict[str, int]:
    """Byte offsets of the fields a sender changes per packet, from the wire layout."""
    out, pos = {}, 0
    for f in (*wire.COMMON_FIELDS, *WebrcData.BODY):
        out[f.name] = pos
        pos += f.bits // 8
    return out


_OFF = _field_offsets()
#: The changing fields and what lies between them (share, rsvd: the template's
#: bytes), seq to tsi in wire order, packed in one call.
_MIDDLE = struct.Struct(f"!II{_OFF['cn'] - _OFF['share']}sHHI")
_MID_AT, _MID_END = _OFF["seq"], _OFF["seq"] + _MIDDLE.size
assert (_OFF["timestamp"], _OFF["share"], _OFF["psn"], _OFF["tsi"]) == (
    _MID_AT + 4, _MID_AT + 8, _OFF["cn"] + 2, _OFF["cn"] + 4), "WEBRC data layout changed"


def _encoder(template: bytes) -> Callable[[int, int, int, int, int], bytes]:
    """:func:`encode_data` for one ``template``, its constant parts cut once:
    a packet is then one pack and one join."""
    head, between, tail = template[:_MID_AT], template[_OFF["share"]:_OFF["cn"]], template[_MID_END:]
    pack = _MIDDLE.pack

    def encode(seq: int, ts: int, cn: int, psn: int, tsi: int) -> bytes:
        return head + pack(seq & 0xFFFFFFFF, ts & 0xFFFFFFFF, between, cn, psn & 0xFFFF, tsi & 0xFFFFFFFF) + tail
    return encode


def encode_data(template: bytes, seq: int, ts: int, cn: int, psn: int, tsi: int) -> bytes:
    """``WebrcData(...).encode()`` from a pre-encoded ``template`` (same session and
    payload length), without re-validating every field: the sender's hot path."""
    return _encoder(template)(seq, ts, cn, psn, tsi)


def channel_group(base_group: str, cn: int, t: int) -> str:
    """Group address of channel ``cn`` (base channel cn = T uses the session group)."""
    return base_group if cn == t else str(ipaddress.IPv4Address(base_group) + 1 + cn)


def channel_groups(group: str, params: WebrcParams) -> tuple[str, ...]:
    """Every group of a session: the base channel first, then waves T-1 .. 0."""
    return tuple(channel_group(group, cn, params.t) for cn in range(params.t, -1, -1))


#: The share of its own link a sender's default SR may fill: the sender sends
#: every channel (RFC 3738 4.2), so its link carries all of SR, and an
#: overflow there drops every channel; the rest is room for IGMP and ARP.
SENDER_LINK_SHARE = 0.9


def wire_rate_bps(params: WebrcParams) -> float:
    """The session's rate on the sender's link: SR with every header of a frame."""
    frame = params.packet_length + DATA_HEADER + wire.FRAME_OVERHEAD
    return params.session_rate_bps * frame / params.packet_length


def fit_sender_link(given: dict[str, Any], link_bps: float) -> tuple[dict[str, Any], str | None]:
    """The parameters to add to ``given`` so that a default SR fits in
    :data:`SENDER_LINK_SHARE` of the sender's ``link_bps``, and a warning when
    a rate the session sets does not fit (kept: the user may mean it)."""
    params = params_from_dict(WebrcParams, given)
    need = wire_rate_bps(params)
    room = SENDER_LINK_SHARE * link_bps
    if need <= room:
        return {}, None
    if any(k.replace("-", "_") == "session_rate_bps" for k in given):
        return {}, (f"WEBRC's session_rate_bps {params.session_rate_bps / 1e6:g} Mbit/s needs "
                    f"{need / 1e6:.3g} Mbit/s on the sender's {link_bps / 1e6:g} Mbit/s link: "
                    "its queue will drop packets of every channel")
    rate = math.floor(params.session_rate_bps * room / need)
    try:
        params_from_dict(WebrcParams, {**given, "session_rate_bps": float(rate)})
    except ValueError as e:
        return {}, f"the sender's {link_bps / 1e6:g} Mbit/s link is too slow for WEBRC: {e}"
    return {"session_rate_bps": float(rate)}, None


class WebrcSender(SessionEndpoint[WebrcParams], role="webrc-sender"):
    """One packet every 1/SR s from the channel with the most credit at its
    fluid rate; each wave's budget, fixed at its start, ends at PSN 65535."""

    TIMERS = frozenset({"send"})  # what on_timer handles (Endpoint.TIMERS)

    def __init__(self, config: SessionConfig) -> None:
        super().__init__(config)
        s = self.p
        self.N, self.T, self.Q = s.n, s.t, s.q
        self.sr = s.session_rate_pps
        self.groups = [channel_group(config.group, cn, self.T) for cn in range(self.T + 1)]
        self.t0 = 0.0
        self.slot = 0
        self.credit: dict[int, float] = {}
        self.budget: dict[int, int] = {}
        self.psn: dict[int, int] = {}
        self.base_psn = 0
        self.seq = 0
        self._coef: list[tuple[int, float]] = []
        self._newest = 0
        self._template = WebrcData(session_id=config.session_id, payload=bytes(s.packet_length)).encode()
        self._encode = _encoder(self._template)
        self._dests = [(g, config.port) for g in self.groups]
        # Per-packet constants, each computed as the schedule's formulas write it.
        self._tsd = s.tsd
        self._dt = 1.0 / self.sr
        self._bcr_tsd = s.base_rate_pps * s.tsd
        self._log_inv_p = math.log(1 / s.p)
        self._slot_end = 0.0  # when the current slot ends: t0 + (slot + 1)·TSD
        self._tsi = 0  # slot mod T
        #: The schedule's own clock: ticks every 1/SR; each packet leaves at its tick.
        self._tick = 0.0

    def wave_slot_packets(self, age: int) -> float:
        """Fluid packets a wave sends in its slot ``age`` (0 = newest)."""
        s = self.p
        k = s.slot_avg
        if age >= 1:
            return s.base_rate_pps * s.p ** (age - self.N) * k * s.tsd
        others = sum(s.base_rate_pps * s.p ** (j - self.N) * k for j in range(1, self.N))
        return (self.sr - s.base_rate_pps * k - others) * s.tsd

    def _slot_coefficients(self) -> None:
        """Per-slot constants of the fluid model: rate = coef · P^τ (τ: slot fraction)."""
        s = self.p
        k = self.slot
        coef = [(self.T, s.base_rate_pps)]
        for j in range(1, self.N):
            coef.append(((k + self.N - 1 - j) % self.T, s.base_rate_pps * s.p ** (j - self.N)))
        self._coef = coef
        self._newest = (k + self.N - 1) % self.T

    def _slot_clock(self) -> None:
        """The current slot's end and TSI, kept for the per-packet schedule."""
        self._slot_end = self.t0 + (self.slot + 1) * self._tsd
        self._tsi = self.slot % self.T

    def _start_wave(self, cn: int, age: int) -> None:
        count = max(1, round(sum(self.wave_slot_packets(a) for a in range(age, self.N))))
        self.budget[cn] = count
        self.psn[cn] = (WEBRC_LAST_PSN + 1 - count) & 0xFFFF
        self.credit[cn] = 0.0

    def on_start(self, now: float) -> None:
        self.t0 = now
        self._slot_clock()
        self._slot_coefficients()
        self.credit[self.T] = 0.0
        for cn in range(self.N):  # at slot 0 channels 0 .. N-1 carry waves, the newest last
            self._start_wave(cn, self.N - 1 - cn)
        self._tick = now
        self.set_timer("send", now)

    def on_datagram(self, data: bytes, src: Address, now: float) -> None:
        # WEBRC has no feedback: anything arriving is counted and dropped,
        # what does not decode as malformed.
        try:
            wire.decode(data)
        except WireError:
            self.malformed += 1
            return
        self.ignored += 1

    def on_timer(self, name: str, now: float) -> None:
        if name != "send":
            return
        sent_at, now = now, self._tick  # the schedule runs on the tick's time
        x = (now - self.t0) / self._tsd  # slots since the start
        slot = math.floor(x + 1e-12)
        while self.slot < slot:
            self._slot_boundary(now)
        dt = self._dt
        T = self.T
        pt = self.p.p ** (x - self.slot)  # P^τ, τ: the slot's elapsed fraction
        credit, budget = self.credit, self.budget
        # Fluid rates: coefficient · P^τ, the newest wave takes the remainder of SR.  Every
        # wave of a coefficient has its credit: a wave's credit lives from its start to the
        # end of its last slot, where the coefficients are made again.
        rest = self.sr
        for cn, coef in self._coef:
            r = coef * pt
            rest -= r
            credit[cn] += r * dt
        newest = self._newest
        if newest in credit:
            credit[newest] += rest * dt
        ending = self._tsi  # the oldest wave ends with this slot
        # Among the waves with budget left the most credit wins, the lower channel on a tie
        # (so the order of the dict is moot); the ending wave counts its deficit too.
        best, best_key = T, credit[T]
        for c, left in budget.items():
            if left <= 0:
                continue
            key = credit[c] + self._end_deficit(x) if c == ending else credit[c]
            if key > best_key or (key == best_key and c < best):
                best, best_key = c, key
        cn = best
        left = budget.get(ending, 0)
        if left > 0 and left >= math.floor((self._slot_end - now) * self.sr - 1e-9) + 1:
            cn = ending  # the wave must finish (PSN 65535) inside its slot: no more ticks left
        credit[cn] -= 1.0
        self._send(cn, sent_at)
        self._tick = tick = now + dt
        self.set_timer("send", sent_at if sent_at >= tick else tick)

    def metrics(self, now: float) -> tuple[dict[str, Any], str] | None:
        return {"rate_bps": self.p.session_rate_bps, "tsi": self.slot % self.T, "packets": self.seq}, "steady"

    def _end_deficit(self, x: float) -> float:
        """Packets the ending wave owes beyond what its fluid rate will earn: extra
        credit, so it sends its whole budget (PSN 65535 last) inside its slot
        (``x``: slots since the start)."""
        tau = x % 1.0
        # ∫ from τ to 1 of BCR·P^(u-1) du, in packets.
        fluid = self._bcr_tsd * (self.p.p ** (tau - 1) - 1) / self._log_inv_p
        ending = self._tsi
        return max(0.0, self.budget[ending] - self.credit[ending] - fluid)

    def _slot_boundary(self, now: float) -> None:
        ending = self.slot % self.T  # the oldest wave ends with this slot
        while self.budget.get(ending, 0) > 0:
            self._send(ending, now, tsi=self.slot % self.T)  # flush the wave's last packets
        self.budget.pop(ending, None)
        self.credit.pop(ending, None)
        self.psn.pop(ending, None)
        self.slot += 1
        self._slot_clock()
        self._slot_coefficients()
        self._start_wave(self._newest, 0)

    def _send(self, cn: int, now: float, tsi: int | None = None) -> None:
        if cn == self.T:
            psn = self.base_psn
            self.base_psn = (psn + 1) & 0xFFFF
        else:
            psn = self.psn[cn]
            self.psn[cn] = (psn + 1) & 0xFFFF
            self.budget[cn] -= 1
        data = self._encode(self.seq, ts_us(now), cn, psn, self._tsi if tsi is None else tsi)
        self.seq += 1
        self.send(self._dests[cn], data)
