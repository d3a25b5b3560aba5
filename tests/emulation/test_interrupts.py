"""A stopping signal is raised after the run's waits, never inside them."""

from __future__ import annotations

import os
import signal
import threading
import time

import pytest

from p4mcc.emulation import interrupts


class _SignalledInsideWait:
    """An event whose wait is interrupted by a signal half-way through, as a
    real ``Event.wait`` is while it hands its condition's lock back."""

    def __init__(self, signum: int) -> None:
        self.signum = signum
        self.finished = False

    def wait(self, timeout: float | None = None) -> bool:
        os.kill(os.getpid(), self.signum)  # the handler runs before kill returns
        self.finished = True
        return False


@pytest.mark.parametrize(("signum", "raised"), [(signal.SIGTERM, interrupts.Terminated),
                                                 (signal.SIGHUP, interrupts.Terminated),
                                                 (signal.SIGINT, KeyboardInterrupt)])
def test_a_signal_inside_the_wait_is_raised_after_it(signum: int, raised: type) -> None:
    event = _SignalledInsideWait(signum)
    with interrupts.stop_on_terminate(), pytest.raises(raised) as caught:
        interrupts.wait(event, 5.0)  # type: ignore[arg-type]
    assert event.finished, "the signal was raised inside the wait"
    assert type(caught.value) is raised


def test_a_signal_during_a_long_wait_ends_it_within_a_slice() -> None:
    event = threading.Event()
    timer = threading.Timer(0.05, os.kill, (os.getpid(), signal.SIGTERM))
    start = time.monotonic()
    with interrupts.stop_on_terminate(), pytest.raises(interrupts.Terminated):
        timer.start()
        interrupts.wait(event, 60.0)
    timer.join()
    # the Timer's delay plus one slice, with room for a busy machine
    assert time.monotonic() - start < 10.0
    event.set()
    assert interrupts.wait(event, 0.0), "the event is still usable after the stop"


def test_outside_a_run_the_handlers_are_given_back() -> None:
    before = signal.getsignal(signal.SIGTERM)
    with interrupts.stop_on_terminate():
        assert signal.getsignal(signal.SIGTERM) is not before
    assert signal.getsignal(signal.SIGTERM) is before


def test_the_wait_returns_what_event_wait_returns() -> None:
    event = threading.Event()
    assert interrupts.wait(event, 0.0) is False
    event.set()
    assert interrupts.wait(event, 1.0) is True
