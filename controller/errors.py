"""The controller's one error shape: ``switch: entity: detail`` on one line."""

from __future__ import annotations


class SwitchFault(RuntimeError):
    """One switch-level failure, printable as is by the CLI.

    ``entity`` names what was being done (``connect``, ``arbitration``, or the
    entity written, e.g. ``insert MccIngress.ipv4_fwd [...]``); ``detail`` is
    the switch's own explanation (P4Runtime status code and message).
    """

    def __init__(self, switch: str, entity: str, detail: str):
        self.switch, self.entity, self.detail = switch, entity, " ".join(str(detail).split())
        super().__init__(f"{switch}: {entity}: {self.detail}")
