"""Run p4c's BMv2 STF packet tests against the built-in switch.

The file format and its checking rules are those of p4c's BMv2 STF driver:

* ``add TABLE [PRIORITY] key:value ... ACTION(param:value, ...)`` — ternary
  values may use ``*`` digits (each written digit masks 4, 3 or 1 bits); an
  lpm value is ``value/prefix`` or, without ``/``, a prefix as long as the
  digits written; key names may be suffixes of the P4Info names; ``$N`` in a
  name stands for ``[N]``.  A larger priority wins.
* ``setdefault TABLE ACTION(...)``, ``packet PORT HEX``, ``expect PORT [HEX]``
  (``*`` matches any nibble, a trailing ``$`` demands an exact length, no
  data accepts anything on that port), ``no_packet``, ``wait``, ``remove all``
* simple_switch_CLI commands: ``mc_mgrp_create``, ``mc_node_create``,
  ``mc_node_update``, ``mc_node_associate``, ``mirroring_add``,
  ``mirroring_add_mc``, ``mirroring_delete``, ``register_read``,
  ``register_write``, ``register_reset``, ``counter_read``,
  ``counter_write``, ``meter_set_rates``, ``meter_array_set_rates``
  (rates per microsecond, as the CLI takes them) and ``check_counter``.

Checking: only ports named by a ``packet`` or ``expect`` line exist; on each
such port the packets out must match the expected ones in order and in
number (a port with a data-less ``expect`` is not checked).  Packets sent to
any other port are lost, as with BMv2's pcap interfaces.
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass, field
from typing import Any, Optional, TextIO

from .runtime.tables import Lpm, Ternary


class StfError(Exception):
    """A malformed STF line or a command the switch rejects."""


@dataclass
class StfResult:
    passed: bool
    messages: list[str] = field(default_factory=list)


_TOKEN = re.compile(r"\s*([A-Za-z_$.][A-Za-z0-9_$.\[\]]*|0[xX][0-9a-fA-F*]+|0[bB][01*]+|[0-9]+(?:\.[0-9]+)?|[():,=/!<>]+|\S)")


def _tokens(text: str) -> list[str]:
    out = []
    pos = 0
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if not m:
            break
        if m.group(1):
            out.append(m.group(1))
        pos = m.end()
    return out


def _int(s: str) -> int:
    s = s.replace("*", "0")
    return int(s, 0)


def _ternary(value: str, width: int) -> Ternary:
    """p4c's rule: every written digit is cared for unless it is ``*``."""
    v = value.lower()
    if v.startswith("0x"):
        per, digits = 4, v[2:]
    elif v.startswith("0b"):
        per, digits = 1, v[2:]
    elif v.startswith("0o"):
        per, digits = 3, v[2:]
    else:
        n = int(v, 10)
        return Ternary(n, (1 << width) - 1)
    mask = 0
    val = 0
    for d in digits:
        mask <<= per
        val <<= per
        if d != "*":
            mask |= (1 << per) - 1
            val |= int(d, 16 if per == 4 else 8 if per == 3 else 2)
    return Ternary(val & mask, mask & ((1 << width) - 1))


def _lpm(value: str, width: int) -> Lpm:
    if "/" in value:
        v, p = value.split("/", 1)
        return Lpm(_int(v) & ((1 << width) - 1), int(p, 0))
    v = value.lower()
    if v.startswith("0x"):
        per, digits = 4, v[2:]
    elif v.startswith("0b"):
        per, digits = 1, v[2:]
    elif v.startswith("0o"):
        per, digits = 3, v[2:]
    else:
        digits = hex(int(v))[2:]
        per = 4
    plen = (len(digits) - digits.count("*")) * per
    return Lpm(_int(value) & ((1 << width) - 1), min(plen, width))


def _match_key(table: Any, name: str) -> Any:
    name = re.sub(r"\$([0-9]+)", r"[\1]", name)
    names = [k.name for k in table.keys]
    # validity keys: P4Info says h.isValid(), BMv2's JSON h.$valid$, STF files either or h.valid
    if name.endswith(".$valid$"):
        name = name[: -len(".$valid$")] + ".isValid()"
    elif name.endswith(".valid"):
        name = name[: -len(".valid")] + ".isValid()"
    elif name in ("$valid$", "valid"):
        name = "isValid()"
    cands = [name, name + "$", name + ".isValid()"]
    for c in cands:
        if c in names:
            return table.keys[names.index(c)]
    for i, n in enumerate(names):
        if n.endswith("." + name) or n.endswith("." + name + "$"):
            return table.keys[i]
    raise StfError(f"table {table.name!r} has no key {name!r}; keys: {names}")


def compare(expected: str, got: bytes) -> Optional[int]:
    """p4c's comparison: None if ``got`` matches, else the first differing nibble index (or -1 for length)."""
    exact = expected.endswith("$")
    exp = expected[:-1] if exact else expected
    hexgot = got.hex().upper()
    exp = exp.upper()
    if exact and len(hexgot) > len(exp):
        return -1
    if len(hexgot) < len(exp):
        return -1
    for i, c in enumerate(exp):
        if c != "*" and c != hexgot[i]:
            return i
    return None


def render_diff(expected: str, got: bytes) -> list[str]:
    """Expected and received hex with ``^`` under every differing nibble."""
    exact = expected.endswith("$")
    exp = (expected[:-1] if exact else expected).upper()
    hexgot = got.hex().upper()
    marks = []
    for i in range(max(len(exp), len(hexgot))):
        e = exp[i] if i < len(exp) else ""
        g = hexgot[i] if i < len(hexgot) else ""
        if e == "*":
            marks.append(" ")
        elif e == "" and not exact:
            marks.append(" ")
        else:
            marks.append(" " if e == g else "^")
    return [f"    expected: {exp}{'$' if exact else ''}", f"    received: {hexgot}", f"              {''.join(marks).rstrip()}"]


class StfRunner:
    """Executes one STF file against a ``Switch``."""

    def __init__(self, switch: Any, out: Optional[TextIO] = None, verbose: bool = False) -> None:
        self.sw = switch
        self.out = out or sys.stdout
        self.verbose = verbose
        self.ports: set[int] = set()
        self.expected: dict[int, list[Optional[str]]] = {}
        self.any_port: set[int] = set()
        self.received: dict[int, list[bytes]] = {}
        self.now = 0.0
        self.errors: list[str] = []

    def run_text(self, text: str, filename: str = "<stf>") -> StfResult:
        lines = text.splitlines()
        i = 0
        while i < len(lines):
            raw = lines[i]
            lineno = i + 1
            i += 1
            line = raw.split("#", 1)[0].strip()
            if not line:
                continue
            try:
                self.command(line)
            except StfError as exc:
                self.errors.append(f"{filename}:{lineno}: {exc}")
            except (KeyError, ValueError, IndexError) as exc:
                self.errors.append(f"{filename}:{lineno}: {type(exc).__name__}: {exc}")
            except Exception as exc:  # the switch rejected a control-plane command
                self.errors.append(f"{filename}:{lineno}: {type(exc).__name__}: {exc}")
        return self.check()

    # ------------------------------------------------------------------ commands
    def command(self, line: str) -> None:
        word, _, rest = line.partition(" ")
        cmd = word.lower()
        rest = rest.strip()
        if cmd == "packet":
            port_s, _, data = rest.partition(" ")
            port = int(port_s, 0)
            self.ports.add(port)
            hexdata = "".join(data.split())
            try:
                pkt = bytes.fromhex(hexdata)
            except ValueError:
                raise StfError(f"bad packet data {hexdata!r}") from None
            self.now += 0.001
            for o in self.sw.process(port, pkt, self.now):
                self.received.setdefault(o.port, []).append(o.data)
            if self.verbose:
                print(f"packet {port} {hexdata}", file=self.out)
        elif cmd == "expect":
            port_s, _, data = rest.partition(" ")
            port = int(port_s, 0)
            self.ports.add(port)
            d = "".join(data.split())
            if d:
                self.expected.setdefault(port, []).append(d)
            else:
                self.any_port.add(port)
        elif cmd in ("no_packet", "wait", "remove"):
            pass
        elif cmd == "add":
            self.add(rest)
        elif cmd == "setdefault":
            toks = _tokens(rest)
            table = toks[0]
            action, params = self._action(toks[1:])
            self.sw.table_set_default(table, action, self._params(table, action, params))
        elif cmd == "mc_mgrp_create":
            self.sw.mc_group_create(int(rest.split()[0], 0))
        elif cmd in ("mc_node_create", "mc_node_update"):
            nums = [int(x, 0) for x in rest.split()]
            if cmd == "mc_node_create":
                self.sw.mc_node_create(nums[0], nums[1:])
            else:
                self.sw.mc_node_update(nums[0], nums[1:])
        elif cmd == "mc_node_associate":
            a, b = [int(x, 0) for x in rest.split()[:2]]
            self.sw.mc_node_associate(a, b)
        elif cmd == "mirroring_add":
            a, b = [int(x, 0) for x in rest.split()[:2]]
            self.sw.mirroring_add(a, b)
        elif cmd == "mirroring_add_mc":
            a, b = [int(x, 0) for x in rest.split()[:2]]
            self.sw.mirroring_add_mc(a, b)
        elif cmd == "mirroring_delete":
            self.sw.mirroring_delete(int(rest.split()[0], 0))
        elif cmd == "register_write":
            name, idx, val = rest.split()[:3]
            self.sw.register_write(name, int(idx, 0), int(val, 0))
        elif cmd == "register_read":
            name, idx = rest.split()[:2]
            v = self.sw.register_read(name, int(idx, 0))
            if self.verbose:
                print(f"{name}[{idx}]= {v}", file=self.out)
        elif cmd == "register_reset":
            self.sw.register_reset(rest.split()[0])
        elif cmd == "counter_read":
            name, idx = rest.split()[:2]
            v = self.sw.counter_read(name, int(idx, 0))
            if self.verbose:
                print(f"{name}[{idx}]= packets {v[0]} bytes {v[1]}", file=self.out)
        elif cmd == "counter_write":
            name, idx, p, b = rest.split()[:4]
            self.sw.counter_write(name, int(idx, 0), int(p, 0), int(b, 0))
        elif cmd in ("meter_set_rates", "meter_array_set_rates"):
            parts = rest.split()
            name = parts[0]
            if cmd == "meter_set_rates":
                idxs = [int(parts[1], 0)]
                rates_s = parts[2:]
            else:
                idxs = list(range(self.sw._mtr(name).size))
                rates_s = parts[1:]
            rates = []
            for r in rates_s:
                a, b = r.split(":")
                rates.append((float(a) * 1e6, int(b, 0)))
            for ix in idxs:
                self.sw.meter_set_rates(name, ix, rates, self.now)
        elif cmd == "check_counter":
            self.check_counter(rest)
        elif cmd in ("mirroring_get", "meter_get_rates"):
            pass
        else:
            raise StfError(f"unknown command {word!r}")

    def _action(self, toks: list[str]) -> tuple[str, list[tuple[str, str]]]:
        if not toks:
            raise StfError("missing action")
        name = toks[0]
        params: list[tuple[str, str]] = []
        j = 1
        if j < len(toks) and toks[j] == "(":
            j += 1
            while j < len(toks) and toks[j] != ")":
                if toks[j] == ",":
                    j += 1
                    continue
                pname = toks[j]
                if j + 2 >= len(toks) or toks[j + 1] != ":":
                    raise StfError(f"bad action argument near {pname!r}")
                params.append((pname, toks[j + 2]))
                j += 3
        elif j < len(toks) and toks[j] == "()":
            pass
        return name, params

    def _params(self, table: str, action: str, params: list[tuple[str, str]]) -> dict[str, int]:
        t = self.sw._table(table)
        spec = t.resolve_action(action)
        names = {n for n, _ in spec.params}
        out = {}
        for n, v in params:
            if n not in names:
                raise StfError(f"action {spec.name!r} has no parameter {n!r}")
            out[n] = _int(v)
        for n, _ in spec.params:
            out.setdefault(n, 0)
        return out

    def add(self, rest: str) -> None:
        toks = _tokens(rest)
        table_name = toks[0]
        t = self.sw._table(table_name)
        j = 1
        prio = None
        if j < len(toks) and toks[j].isdigit() and (j + 1 >= len(toks) or toks[j + 1] != ":"):
            prio = int(toks[j])
            j += 1
        keys: dict[str, Any] = {}
        while j + 2 < len(toks) and toks[j + 1] == ":":
            kname, val = toks[j], toks[j + 2]
            j += 3
            if j + 1 < len(toks) and toks[j] == "/":
                val = f"{val}/{toks[j + 1]}"
                j += 2
            spec = _match_key(t, kname)
            if spec.match_kind == "ternary":
                keys[spec.name] = _ternary(val, spec.width)
            elif spec.match_kind == "lpm":
                keys[spec.name] = _lpm(val, spec.width)
            else:
                keys[spec.name] = _int(val) & ((1 << spec.width) - 1)
        rest_toks = toks[j:]
        if "=" in rest_toks:
            rest_toks = rest_toks[: rest_toks.index("=")]
        action, params = self._action(rest_toks)
        for k in t.keys:
            if k.name not in keys and k.match_kind == "exact":
                keys[k.name] = 0
        if t.needs_priority and prio is None:
            prio = 1
        self.sw.table_add(t.name, keys, action, self._params(t.name, action, params), prio)

    def check_counter(self, rest: str) -> None:
        m = re.match(r"\s*([A-Za-z_.$0-9\[\]]+)\s*\(\s*([A-Za-z0-9_]+)\s*\)\s*(?:(bytes|packets)\s*(==|!=|<=|<|>=|>)\s*(\S+))?", rest)
        if not m:
            raise StfError(f"bad check_counter {rest!r}")
        name, idx, kind, op, val = m.groups()
        pk, by = self.sw.counter_read(name, int(idx, 0))
        actual = by if kind == "bytes" else pk
        want = int(val, 0) if val else 0
        op = op or "=="
        ok = {"==": actual == want, "!=": actual != want, "<": actual < want, "<=": actual <= want,
              ">": actual > want, ">=": actual >= want}[op]
        if not ok:
            self.errors.append(f"check_counter {name}({idx}): {kind or 'packets'} {actual} not {op} {want}")

    # ------------------------------------------------------------------ verdict
    def check(self) -> StfResult:
        msgs = list(self.errors)
        ok = not self.errors
        for port in sorted(self.ports):
            if port in self.any_port:
                continue
            exp = self.expected.get(port, [])
            got = self.received.get(port, [])
            bad = len(exp) != len(got)
            lines = []
            for k in range(max(len(exp), len(got))):
                e = exp[k] if k < len(exp) else None
                g = got[k] if k < len(got) else None
                if e is not None and g is not None:
                    if compare(e, g) is not None:
                        bad = True
                        lines.append(f"  packet {k}: differs")
                        lines.extend(render_diff(e, g))
                elif e is not None:
                    lines.append(f"  packet {k}: missing, expected {e}")
                else:
                    lines.append(f"  packet {k}: unexpected {g.hex().upper() if g else ''}")
            if bad:
                ok = False
                msgs.append(f"port {port}: expected {len(exp)} packet(s), received {len(got)}")
                msgs.extend(lines)
        return StfResult(ok, msgs)


def run_stf(program_path: str, stf_path: str, include_dirs: tuple = (), out: Optional[TextIO] = None,
            verbose: bool = False) -> StfResult:
    """Compile ``program_path``, run ``stf_path`` against it and return the verdict."""
    from .frontend import compile_file
    from .interp import Switch

    sw = Switch(compile_file(program_path, include_dirs))
    with open(stf_path, encoding="utf-8") as f:
        text = f.read()
    return StfRunner(sw, out, verbose).run_text(text, stf_path)


EXIT_PASS, EXIT_FAIL, EXIT_UNSUPPORTED, EXIT_COMPILE, EXIT_INTERNAL = 0, 1, 3, 4, 5


def main(argv: Optional[list[str]] = None, out: Optional[TextIO] = None) -> int:
    """``p4mcc stf PROG.p4 TEST.stf``: exit 0 pass, 1 fail, 3 unsupported, 4 compile error."""
    import argparse

    ap = argparse.ArgumentParser(prog="p4mcc stf")
    ap.add_argument("program")
    ap.add_argument("stf")
    ap.add_argument("-I", dest="include", action="append", default=[])
    ap.add_argument("-v", "--verbose", action="store_true")
    ap.add_argument("--dump-python", action="store_true", help="print the generated pipeline code")
    args = ap.parse_args(argv)
    return run_cli(args, out)


def run_cli(args: Any, out: Optional[TextIO] = None) -> int:
    out = out or sys.stdout
    from .frontend import compile_file
    from .frontend.errors import P4Error
    from .interp import UnsupportedError

    try:
        prog = compile_file(args.program, getattr(args, "include", []) or [])
    except P4Error as exc:
        print(exc.format() if hasattr(exc, "format") else str(exc), file=out)
        return EXIT_COMPILE
    try:
        from .native import make_switch, pipeline_from_env

        sw = make_switch(prog, getattr(args, "pipeline", None) or pipeline_from_env())
    except UnsupportedError as exc:
        print(f"unsupported: {exc}", file=out)
        return EXIT_UNSUPPORTED
    except Exception as exc:  # a bug in the interpreter: report, do not hide
        import traceback

        print(f"internal error while building the switch: {type(exc).__name__}: {exc}", file=out)
        traceback.print_exc(file=out)
        return EXIT_INTERNAL
    if getattr(args, "dump_python", False):
        print(sw.source, file=out)
    try:
        with open(args.stf, encoding="utf-8") as f:
            text = f.read()
    except OSError as exc:
        print(f"cannot read {args.stf}: {exc}", file=out)
        return EXIT_FAIL
    res = StfRunner(sw, out, getattr(args, "verbose", False)).run_text(text, args.stf)
    if res.passed:
        print(f"PASS {args.stf}", file=out)
        return EXIT_PASS
    print(f"FAIL {args.stf}", file=out)
    for m in res.messages:
        print(m, file=out)
    if sw.last_error:
        print(f"last switch error: {sw.last_error}", file=out)
    return EXIT_FAIL


if __name__ == "__main__":
    sys.exit(main())
