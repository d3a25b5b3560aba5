"""MTCP's user-facing parameters; every other number is a constant of the core or of a rule."""

from __future__ import annotations

from dataclasses import dataclass

from p4mcc.hosts.mtcp import tree as mtcp_tree
from p4mcc.hosts.core import check_params
from p4mcc.hosts.reliable import StreamParams


@dataclass
class MtcpParams(StreamParams):
    """What a user of MTCP sets: the stream (:class:`hosts.reliable.StreamParams`, shared with RLA) and its tree."""

    #: The logical tree, ``"child>parent,..."`` (IPv4 addresses, :mod:`hosts.mtcp.tree`);
    #: empty: every receiver is a child of the sender.
    tree: str = ""
    #: The fan-out bound of the tree (paper 4.1.1: 16 "a reasonable upper bound").
    k: int = 16
    #: None: the session's ``assistance`` decides; set: overrides it (a core driven outside a
    #: scenario).  Only a flat tree can be assisted.
    assisted: bool | None = None
    #: The receive buffer in packets: the advertised window, so it must cover the path's BDP.
    rcv_buffer: int = 4096

    def __post_init__(self) -> None:
        super().__post_init__()
        check_params(self, k=1, rcv_buffer=1)
        if self.assisted and self.tree:
            raise ValueError("switch-assisted sessions use the flat tree (leave 'tree' empty)")
        if self.tree:
            mtcp_tree.parse(self.tree, mtcp_tree.root_of(self.tree), self.k)  # TreeError is a ValueError
