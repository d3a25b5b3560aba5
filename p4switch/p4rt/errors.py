"""P4Runtime error values: a gRPC canonical code with a message.

Handlers raise :class:`P4RTError`; the server turns it into the RPC status
(whole-request errors) or into one ``p4.v1.Error`` per update in the status
details (Write batches), as the spec's "Error Reporting" section asks.
"""

from __future__ import annotations

from enum import IntEnum

import grpc


class Code(IntEnum):
    """``google.rpc.Code`` values used by the server."""

    OK = 0
    CANCELLED = 1
    UNKNOWN = 2
    INVALID_ARGUMENT = 3
    DEADLINE_EXCEEDED = 4
    NOT_FOUND = 5
    ALREADY_EXISTS = 6
    PERMISSION_DENIED = 7
    RESOURCE_EXHAUSTED = 8
    FAILED_PRECONDITION = 9
    ABORTED = 10
    OUT_OF_RANGE = 11
    UNIMPLEMENTED = 12
    INTERNAL = 13
    UNAVAILABLE = 14

    @property
    def grpc(self) -> grpc.StatusCode:
        for sc in grpc.StatusCode:
            if sc.value[0] == int(self):
                return sc
        return grpc.StatusCode.UNKNOWN


class P4RTError(Exception):
    """An error with the canonical code the spec prescribes for it."""

    def __init__(self, code: Code, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message

    def __str__(self) -> str:
        return f"{self.code.name}: {self.message}"
