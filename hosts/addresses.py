"""Which addresses a session may use: the one owner of that rule.

A session's group must be an IPv4 multicast address outside 224.0.0.0/24:
that block is link-local (RFC 5771 4), never forwarded by a router and
answered by every host (224.0.0.1 is all systems), so a session there would
never leave its link and would reach hosts that never joined it.  Scenarios,
``p4mcc host`` and the controller all ask here.
"""

from __future__ import annotations

import ipaddress

LINK_LOCAL = ipaddress.IPv4Network("224.0.0.0/24")


def group_problem(group: str) -> str | None:
    """Why ``group`` cannot be a session's multicast group, or None."""
    try:
        addr = ipaddress.IPv4Address(group)
    except ValueError:
        return f"not an IPv4 address: {group!r}"
    if not addr.is_multicast:
        return f"{group} is not a multicast address (224.0.0.0/4)"
    if addr in LINK_LOCAL:
        return f"{group} is link-local (224.0.0.0/24), never routed"
    return None
