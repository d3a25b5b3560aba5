"""Encode/decode rates of the wire codec, one line per message type.

Prints messages per second for encode and decode of a typical instance of
every message type (data messages with a 1000-byte payload).  ``--docs``
also writes them into docs/performance.md.
"""

from __future__ import annotations

import sys
import time
from dataclasses import fields
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from p4mcc.hosts import wire  # noqa: E402


def sample(cls: type[wire.Message]) -> wire.Message:
    kw: dict[str, object] = {}
    names = {f.name for f in fields(cls)}
    if "payload" in names:
        kw["payload"] = b"\xab" * 1000
    if "blocks" in names:
        kw["blocks"] = ((10, 20), (30, 40), (50, 60))
    if "missing" in names:
        kw["missing"] = tuple(range(100, 108))
    return cls(session_id=7, seq=123456, timestamp=99, **kw)


def rate(fn, arg, seconds: float = 0.3) -> float:
    n, start = 0, time.perf_counter()
    while True:
        for _ in range(500):
            fn(arg)
        n += 500
        el = time.perf_counter() - start
        if el >= seconds:
            return n / el


def main() -> None:
    if "--docs" in sys.argv[1:]:  # also write the figures into docs/performance.md
        from bench import docsection

        with docsection.Tee() as out:
            table()
        docsection.write_section(ROOT / "docs" / "performance.md", "codec-speed", docsection.fenced(out.text()),
                                 docsection.command_line("bench/codec_speed.py"))
        return
    table()


def table() -> None:
    print(f"{'message':<18} {'encode/s':>12} {'decode/s':>12} {'bytes':>6}")
    for cls in wire.message_types().values():
        msg = sample(cls)
        raw = msg.encode()
        enc = rate(lambda m: m.encode(), msg)
        dec = rate(wire.decode, raw)
        print(f"{cls.__name__:<18} {enc:>12,.0f} {dec:>12,.0f} {len(raw):>6}")


if __name__ == "__main__":
    main()
