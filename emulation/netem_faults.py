"""Link faults that need the kernel's ``netem``: reorder, duplicate, corrupt,
and a ``link_change`` of delay, loss or queue.

The simulator injects them itself (``netsim/faults.py``).  In Mininet they
are netem on the egress of the link's veth ends, as ``tc`` documents them
(tc-netem(8)):

* ``link_reorder``: ``delay D reorder P%`` sends P % of the frames at once
  and holds the others D, so the share a scenario gives (``fraction`` held)
  is ``P = 100 - 100 * fraction``;
* ``link_duplicate``: ``duplicate P%``; ``link_corrupt``: ``corrupt P%``
  (a random bit of the frame; the kernels' UDP checksum then drops the
  datagram before an agent reads it, so the agents see it as a loss);
* ``link_change``: netem adds to the link's own emulation, so it carries
  the difference: ``delay`` (the new delay less the link's), ``loss`` (what
  makes the two together the new loss), and ``rate`` when the fault also
  gives one.  A shorter delay, less loss or another queue cannot be added
  (:func:`change_problem`).

A kernel without netem (this module is absent from many minimal kernels)
cannot do any of them: :func:`refusal` gives the one line, before the run's
clock starts.  An end that p4mcc already shapes with the kernel (BMv2's
links, ``emulation/shaping.py``) keeps its shaping, so a fault whose
direction leaves through such an end is refused the same way.
"""

from __future__ import annotations

from typing import Any, Iterable

from p4mcc.emulation.shaping import KERNEL

#: Fault kinds that exist only as netem.
NETEM_KINDS = frozenset({"link_reorder", "link_duplicate", "link_corrupt"})


def needs_netem(fault: Any) -> bool:
    """The fault cannot be injected without netem."""
    if fault.kind in NETEM_KINDS:
        return True
    return fault.kind == "link_change" and bool(set(fault.params) - {"rate", "from"})


def _pct(x: float) -> str:
    return f"{100.0 * x:.6g}%"


def netem_args(fault: Any, link: Any = None) -> str:
    """The arguments after ``netem`` for one fault (see the module doc);
    ``link`` (scenario.topology.Link) is the faulted link, for ``link_change``."""
    p = fault.params
    if fault.kind == "link_reorder":
        hold_us = round(p["delay"] * 1e6)
        return f"delay {hold_us}us reorder {_pct(1.0 - p['fraction'])}"
    if fault.kind == "link_duplicate":
        return f"duplicate {_pct(p['fraction'])}"
    if fault.kind == "link_corrupt":
        return f"corrupt {_pct(p['fraction'])}"
    if fault.kind == "link_change":
        # netem adds to the link's own emulation (the switch's, or BMv2's
        # shaping): it gives the difference (:func:`change_problem` refuses the rest).
        parts = []
        if "delay" in p:
            parts.append(f"delay {round((p['delay'] - link.delay_s) * 1e6)}us")
        if "loss" in p:
            parts.append(f"loss {_pct(1.0 - (1.0 - p['loss']) / (1.0 - float(link.loss)))}")
        if "rate" in p:
            parts.append(f"rate {int(p['rate'])}bit")
        return " ".join(parts)
    raise ValueError(f"{fault.kind} is not a netem fault")


def change_problem(fault: Any, link: Any) -> str | None:
    """Why a ``link_change`` cannot be made with netem on top of the link's
    own emulation, or None.  netem can only add: a longer delay, more loss,
    a lower rate; the queue is the switch's own and cannot change while it runs."""
    p = fault.params
    if "queue" in p:
        return "the queue belongs to the switch's link emulation, which cannot change while it runs"
    if "delay" in p and p["delay"] < link.delay_s:
        return f"netem can only lengthen the delay (the link has {link.delay_s * 1e3:g} ms)"
    if "loss" in p and not isinstance(link.loss, (int, float)):
        return "the link's loss is a Gilbert-Elliott model, to which netem cannot add"
    if "loss" in p and p["loss"] < float(link.loss):
        return f"netem can only add loss (the link has {float(link.loss):.6g})"
    return None


def commands(iface: str, args: str, on: bool) -> list[str]:
    """tc commands putting netem with ``args`` on ``iface``'s egress, or taking it off."""
    if on:
        return [f"tc qdisc replace dev {iface} root netem {args}"]
    return [f"tc qdisc del dev {iface} root"]


def kernel_shaped(shapings: Iterable[Any]) -> set[tuple[str, str]]:
    """(node, interface) pairs whose egress p4mcc shapes with tc (``Shaping.where``)."""
    out = set()
    for row in shapings:
        if getattr(row, "how", "") == KERNEL:
            node, _, dev = str(row.where).partition(" ")
            out.add((node, dev))
    return out


def fault_ends(fault: Any, ends: list[tuple[str, str]], shaped: set[tuple[str, str]]) -> list[tuple[str, str]]:
    """The veth ends whose egress the fault's netem goes on: the sending end
    of each direction it hits (``from``, or both).  Empty when p4mcc's own
    tc shaping sits on one of them: a second root discipline would replace
    it, and the other end's egress is the other direction."""
    src = fault.params.get("from")
    wanted = [e for e in ends if src is None or e[0] == src]
    return [] if any(e in shaped for e in wanted) else wanted


def refusal(index: int, fault: Any, have_netem: bool, ends: list[tuple[str, str]]) -> str | None:
    """The one line refusing fault ``index`` before the run starts, or None."""
    if not needs_netem(fault):
        return None
    what = fault.kind if fault.kind != "link_change" else \
        f"link_change of {', '.join(sorted(set(fault.params) - {'rate', 'from'}))}"
    if not ends:
        return (f"faults[{index}]: {what}: {'--'.join(fault.target)} is shaped by tc for BMv2 "
                "(emulation/shaping.py), and a second root discipline would replace that shaping; "
                "use --target builtin or p4mcc sim")
    if not have_netem:
        return f"faults[{index}]: {what} needs netem, which this kernel lacks; use p4mcc sim"
    return None
