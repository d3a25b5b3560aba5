"""Signals that stop an emulation run, raised only where raising is safe.

A Python signal handler runs between two bytecodes of the main thread.  If it
raises while ``threading.Event.wait`` is giving its condition's lock back, the
wait's ``finally`` releases a lock it no longer holds, and the user reads
``RuntimeError: release unlocked lock`` in place of the clean stop (the run's
cleanup still runs, but the exit status and message are wrong).  The run's
main loop spends nearly all its time in such waits, so the race is common.

:func:`stop_on_terminate` installs handlers for SIGINT, SIGTERM and SIGHUP
that raise at once outside a :func:`wait`, and inside one only record the
signal; :func:`wait` then raises it after the lock is safely released.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

# How long a deferred signal may wait before it is raised: the slice
# :func:`wait` sleeps in.  A fifth of a second is quicker than a user notices.
_SLICE = 0.2

_state = threading.local()


class Terminated(KeyboardInterrupt):
    """SIGTERM or SIGHUP reached the run."""


def _stop_for(signum: int) -> KeyboardInterrupt:
    if signum == signal.SIGINT:
        return KeyboardInterrupt()
    return Terminated(signal.Signals(signum).name)


def _handler(signum: int, _frame: Any) -> None:
    if getattr(_state, "deferring", False):
        _state.pending = signum
        return
    raise _stop_for(signum)


@contextmanager
def stop_on_terminate() -> Iterator[None]:
    """SIGTERM and SIGHUP end the run as Ctrl-C does: through its cleanup.

    Without a handler either signal ends Python at once, and the run's
    switches, agents, iperf3 processes and Mininet interfaces stay behind
    until ``p4mcc stop``; ``timeout`` and service managers send SIGTERM.
    SIGINT takes the same handler so that Ctrl-C, too, is raised only
    outside a lock hand-over."""
    sigs = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
    old = {sig: signal.signal(sig, _handler) for sig in sigs}
    try:
        yield
    finally:
        for sig, handler in old.items():
            signal.signal(sig, handler)


def wait(event: threading.Event, timeout: float) -> bool:
    """``event.wait(timeout)``, with a stopping signal raised after the wait.

    Waits in slices of :data:`_SLICE` so a signal that arrives meanwhile is
    raised within one slice.  Returns whether the event is set, as
    ``Event.wait`` does.  Outside :func:`stop_on_terminate` (and off the main
    thread, where no handler runs) it is a plain wait."""
    if threading.current_thread() is not threading.main_thread():
        return event.wait(timeout)
    remaining = max(0.0, timeout)
    _state.deferring = True
    try:
        while True:
            step = min(_SLICE, remaining)
            got = event.wait(step)
            remaining -= step
            pending = getattr(_state, "pending", None)
            if pending is not None:
                _state.pending = None
                raise _stop_for(pending)
            if got or remaining <= 0.0:
                return got
    finally:
        _state.deferring = False
        # a signal between the last check and this line must not be lost
        pending = getattr(_state, "pending", None)
        if pending is not None:
            _state.pending = None
            raise _stop_for(pending)
