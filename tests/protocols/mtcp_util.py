"""MTCP's classes as a profile composes them, for tests that drive the cores directly.

``hosts.mtcp.MtcpSender``/``MtcpReceiver`` are the paper's cores; the
registry composes the session's rules onto them.  Tests of today's
behaviour use the ``default`` composition; a test of one rule switches it.
"""

from __future__ import annotations

from p4mcc.hosts.mtcp import RULES
from p4mcc.hosts.mtcp import MtcpReceiver as PaperReceiver
from p4mcc.hosts.mtcp import MtcpSender as PaperSender


def composed(core: type, profile: str = "default", **switches: bool) -> type:
    """``core`` with ``profile``'s rules, each of ``switches`` turned on or off by name."""
    return RULES.compose(core, RULES.resolve(profile, switches))


MtcpSender = composed(PaperSender)
MtcpReceiver = composed(PaperReceiver)

__all__ = ["MtcpReceiver", "MtcpSender", "PaperReceiver", "PaperSender", "composed"]


def profile_factory(profile: str = "paper", *, switch_assists: bool = True, **switches: bool):
    """A simulator agent factory (``netsim.run.AgentFactory``) that runs MTCP
    sessions under ``profile`` with ``switches``; other protocols as the registry builds them.
    ``switch_assists`` False: the switches only replicate (the model switch)."""
    import dataclasses

    from p4mcc.netsim.run import registry_factory

    names = RULES.resolve(profile, switches)

    def factory(sess, role, host, ip, sender_ip, seed):  # type: ignore[no-untyped-def]
        agent = registry_factory(sess, role, host, ip, sender_ip, seed, switch_assists=switch_assists)
        if sess.protocol != "mtcp":
            return agent
        core = PaperSender if role == "sender" else PaperReceiver
        return RULES.compose(core, names)(dataclasses.replace(agent.cfg, rules=names))

    return factory
