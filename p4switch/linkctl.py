"""Changing a running link emulation: a Unix socket that takes one change per connection.

p4mcc's link emulation (:mod:`p4switch.linkemu`) runs inside the built-in
switch and inside the link process beside BMv2 (:mod:`emulation.linkproc`).
A fault that changes a link while the run goes on (``link_change``) needs
to reach it.  The kernel's netem can only add delay and loss on top of it,
and many kernels have no netem at all; the emulation itself can take any
new value, exactly.

The protocol is one line each way on a ``SOCK_STREAM`` Unix socket::

    PORT:DIR:key=value,...      ->  ok
    PORT:DIR:initial            ->  ok        (back to the values it started with)
    anything wrong              ->  error: <why>

``PORT:DIR:key=value`` is the ``--link`` flag syntax
(:func:`p4switch.linkemu.parse_port_flag`); ``DIR`` is ``egress``,
``ingress`` or ``both``.  The keys a change leaves out keep their values.
"""

from __future__ import annotations

import logging
import os
import socket
import stat
import threading
from pathlib import Path
from typing import Callable

from p4mcc.p4switch.linkemu import LinkConfigError, parse_port_flag

LOG = logging.getLogger("p4mcc.p4switch.linkctl")

#: The value that puts a direction back to its start-up configuration.
INITIAL = "initial"
#: The longest request line a server reads (a flag is a few dozen bytes).
MAX_LINE = 512
#: Seconds a client waits for the answer.
REPLY_TIMEOUT_S = 2.0

#: ``apply(port, direction, settings)``; ``settings`` None means "initial".
#: Raises LinkConfigError (or KeyError for an unknown port) on a bad change.
Apply = Callable[[int, str, "dict[str, str] | None"], None]


class LinkControlError(RuntimeError):
    """A change the link emulation refused, or could not be asked for."""


def parse_request(line: str) -> tuple[int, str, dict[str, str] | None]:
    """``(port, direction, settings)`` of one request line; settings None: back to the start."""
    text = line.strip()
    port_dir, sep, rest = text.rpartition(":")
    if sep and rest == INITIAL:
        port, direction, _ = parse_port_flag(f"{port_dir}:")
        return port, direction, None
    port, direction, settings = parse_port_flag(text)
    if not settings:
        raise LinkConfigError(f"no change in {text!r}: give key=value pairs or {INITIAL!r}")
    return port, direction, settings


class LinkControlServer:
    """Serves :func:`request` on ``path`` in a thread of its own.

    The socket file is this server's: it removes it when it stops.  A
    socket left by a server that died (a crashed switch restarted on the
    same path) is taken over; a path another server answers on, or a file
    that is not a socket, is refused.
    """

    def __init__(self, path: str | Path, apply: Apply) -> None:
        self.path = str(path)
        self.apply = apply
        self.changes = 0
        self.refused = 0
        if os.path.lexists(self.path):
            if not _stale_socket(self.path):
                raise OSError(f"link control socket {self.path} exists")
            os.unlink(self.path)
        self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._sock.bind(self.path)
        self._sock.listen(4)
        self._thread = threading.Thread(target=self._serve, name="p4switch-linkctl", daemon=True)
        self._stopping = False

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stopping = True
        try:
            self._sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self._sock.close()
        self._thread.join(timeout=2)
        try:
            os.unlink(self.path)
        except FileNotFoundError:
            pass

    def _serve(self) -> None:
        while not self._stopping:
            try:
                conn, _ = self._sock.accept()
            except OSError:
                return
            with conn:
                conn.settimeout(REPLY_TIMEOUT_S)
                try:
                    line = _read_line(conn)
                    if line.strip():  # nothing sent: a probe for a live server
                        conn.sendall((self.handle(line) + "\n").encode())
                except OSError:
                    continue

    def handle(self, line: str) -> str:
        """The answer to one request line (applied when it is ``ok``)."""
        try:
            port, direction, settings = parse_request(line)
            self.apply(port, direction, settings)
        except (LinkConfigError, KeyError, ValueError) as e:
            self.refused += 1
            why = f"no port {e.args[0]}" if isinstance(e, KeyError) else str(e)
            LOG.warning("link change %r refused: %s", line.strip(), why)
            return f"error: {why}"
        self.changes += 1
        LOG.info("link change: %s", line.strip())
        return "ok"


def _stale_socket(path: str) -> bool:
    """``path`` is a socket nobody listens on any more."""
    if not stat.S_ISSOCK(os.lstat(path).st_mode):
        return False
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        try:
            s.connect(path)
        except ConnectionRefusedError:
            return True
        except OSError:
            return False
    return False


def _read_line(conn: socket.socket) -> str:
    buf = b""
    while b"\n" not in buf and len(buf) <= MAX_LINE:
        chunk = conn.recv(MAX_LINE)
        if not chunk:
            break
        buf += chunk
    return buf.split(b"\n", 1)[0][:MAX_LINE].decode("utf-8", "replace")


def request(path: str | Path, line: str, timeout: float = REPLY_TIMEOUT_S) -> None:
    """Send one change to the server on ``path``; LinkControlError with its reason if refused."""
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            s.settimeout(timeout)
            s.connect(str(path))
            s.sendall(line.strip().encode() + b"\n")
            answer = _read_line(s).strip()
    except OSError as e:
        raise LinkControlError(f"link control {path}: {e}") from None
    if answer != "ok":
        raise LinkControlError(f"link control {path}: {answer.removeprefix('error: ') or 'no answer'}")

