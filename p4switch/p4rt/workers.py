"""An executor that never makes an RPC wait for a thread.

The synchronous gRPC server runs every RPC, streaming ones included, on a
thread of the executor it is given, and a StreamChannel keeps its thread for
as long as the controller stays connected.  With a fixed pool of N threads,
N idle streams leave no thread for a Write or a Read, which then time out.

:class:`ElasticExecutor` runs each task on an idle thread when there is one
and starts a new thread otherwise, so streams never use up the threads unary
RPCs need.  What bounds the number of threads is the server's
``maximum_concurrent_rpcs`` (gRPC answers ``RESOURCE_EXHAUSTED`` beyond it)
and the server's own cap on open streams; idle threads above ``keep`` end
after ``idle_s``.
"""

from __future__ import annotations

import queue
import threading
from concurrent import futures
from typing import Any, Callable


class ElasticExecutor(futures.Executor):
    """Thread-per-task with reuse: a submitted task starts at once."""

    def __init__(self, name: str = "worker", keep: int = 4, idle_s: float = 30.0) -> None:
        self._name = name
        self._keep = keep
        self._idle_s = idle_s
        self._tasks: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._idle = 0
        self._threads = 0
        self._n = 0
        self._shutdown = False

    @property
    def threads(self) -> int:
        """Worker threads alive now (busy or idle)."""
        return self._threads

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> futures.Future[Any]:
        fut: futures.Future[Any] = futures.Future()
        with self._lock:
            if self._shutdown:
                raise RuntimeError("cannot submit after shutdown")
            self._tasks.put((fut, fn, args, kwargs))
            if self._idle > 0:
                self._idle -= 1  # that idle thread takes this task
            else:
                self._threads += 1
                self._n += 1
                threading.Thread(target=self._work, name=f"{self._name}-{self._n}", daemon=True).start()
        return fut

    def _work(self) -> None:
        while True:
            try:
                item = self._tasks.get(timeout=self._idle_s)
            except queue.Empty:
                with self._lock:
                    # Leave only when no task was handed to this idle thread meanwhile.
                    if self._idle > 0 and self._threads > self._keep:
                        self._idle -= 1
                        self._threads -= 1
                        return
                continue
            if item is None:
                with self._lock:
                    self._threads -= 1
                return
            fut, fn, args, kwargs = item
            if fut.set_running_or_notify_cancel():
                try:
                    fut.set_result(fn(*args, **kwargs))
                except BaseException as e:  # noqa: BLE001 - handed to the future's owner
                    fut.set_exception(e)
            del item, fut, fn, args, kwargs
            with self._lock:
                self._idle += 1

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        with self._lock:
            self._shutdown = True
            n = self._threads
        for _ in range(n):
            self._tasks.put(None)
