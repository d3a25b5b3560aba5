"""RLA's profiles: ``paper`` is the published algorithm and runs on its own;
its core has no switch; ``default`` composes every rule."""

from __future__ import annotations

from testnet import TinyNet

from p4mcc.hosts import rla
from p4mcc.hosts.registry import SessionConfig, get
from p4mcc.hosts.rla import RULES, RlaParams, RlaReceiver, RlaSender

GROUP, PORT, SND = "239.1.1.1", 5000, "10.0.0.1"


def _session(local: str, params: RlaParams) -> SessionConfig:
    return SessionConfig(9, GROUP, PORT, SND, local, params, seed=3, rules=())


def test_the_registry_builds_the_papers_core_for_the_paper_profile() -> None:
    proto = get("rla")
    assert proto.resolve_rules("paper") == ()
    assert type(proto.sender(_session(SND, RlaParams()))) is RlaSender
    assert type(proto.receiver(_session("10.0.1.1", RlaParams()))) is RlaReceiver
    # default: the rules listed by name; stamped: those and the stamp's
    stamp = ("stamp_climb", "stamp_hold", "stamp_echo", "share_window")
    assert proto.resolve_rules("default") == tuple(n for n in RULES.names() if n in rla.rules.DEFAULT)
    assert proto.resolve_rules("stamped") == tuple(n for n in RULES.names()
                                                   if n in rla.rules.DEFAULT or n in stamp)


def test_the_paper_profile_delivers_every_byte_through_loss() -> None:
    """Two receivers behind a 2 Mbit/s bottleneck with 1 % loss at each: the
    paper's RLA (SACK per packet, a draw per signal, timeouts of one RTO)
    delivers every byte in order."""
    net = TinyNet(seed=5)
    net.router("R1")
    s = net.host("s", SND)
    net.link("s", "R1", rate_bps=2e6, delay_s=0.01, queue=20)
    hosts = []
    for i in range(2):
        h = net.host(f"h{i}", f"10.0.2.{i + 1}")
        net.link("R1", h.name, rate_bps=100e6, delay_s=0.001, loss=0.01)
        hosts.append(h)
    p = RlaParams(total_packets=600, receivers=2, packet_size=1000)
    snd = get("rla").sender(_session(SND, p))
    s.attach(snd)
    for h in hosts:
        h.attach(get("rla").receiver(_session(h.ip, p)))
    net.run(30)
    assert snd.done and snd.congestion_signals > 0
    for h in hosts:
        assert [d.seq for d in h.delivered] == list(range(1, 601))


def _branch_params(module: object) -> set[str]:
    """Parameters (``self.p.X``) read in the tests of ``if``, ``while`` and ``x if c else y``."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(inspect.getsource(module))):  # type: ignore[arg-type]
        if isinstance(node, (ast.If, ast.While, ast.IfExp)):
            for sub in ast.walk(node.test):
                if (isinstance(sub, ast.Attribute) and isinstance(sub.value, ast.Attribute)
                        and sub.value.attr == "p"):
                    found.add(sub.attr)
    return found


def test_the_package_exports_its_public_names() -> None:
    assert set(rla.__all__) == {"RULES", "RlaParams", "RlaReceiver", "RlaSender"}
    assert RULES.profiles["paper"] == ()
