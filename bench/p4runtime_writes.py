"""Table entries written per second through P4Runtime to ``p4mcc switch``.

Starts a switch on loopback with the P4Runtime test program, becomes primary,
then inserts N exact-match entries one Write per entry and in batches, and
prints entries/s for each.  The client is the plain gRPC stub (not finsy) so
the figure is the server's, not a client library's.

    .venv/bin/python bench/p4runtime_writes.py [--entries 1000] [--batch 250]
"""

from __future__ import annotations

import argparse
import queue
import sys
import time
from pathlib import Path

import grpc

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests" / "p4switch_p4rt"))

from finsy.proto import p4r  # noqa: E402
from finsy.proto.p4.v1 import p4runtime_pb2_grpc  # noqa: E402
from switchproc import SwitchProc  # noqa: E402

from p4mcc.p4switch.frontend import compile_file  # noqa: E402
from p4mcc.p4switch.p4rt.device import make_bundle  # noqa: E402
from p4mcc.p4switch.p4rt.p4info import build_p4info  # noqa: E402

PROGRAM = ROOT / "tests" / "p4switch_p4rt" / "programs" / "l2.p4"


def entry_update(table_id: int, action_id: int, mac: int, kind: int) -> p4r.Update:
    u = p4r.Update(type=kind)
    te = u.entity.table_entry
    te.table_id = table_id
    te.match.add(field_id=1).exact.value = mac.to_bytes(6, "big")
    te.action.action.action_id = action_id
    return u


def write(stub, updates) -> None:
    req = p4r.WriteRequest(device_id=1)
    req.election_id.low = 1
    req.updates.extend(updates)
    stub.Write(req)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--entries", type=int, default=1000, help="at most the table size, 1024")
    ap.add_argument("--batch", type=int, default=250)
    args = ap.parse_args()
    program = compile_file(str(PROGRAM))
    info = build_p4info(program)
    # MyIngress.smac: exact on a 48-bit key, 1024 entries, NoAction takes no data.
    fwd_id = next(t.preamble.id for t in info.tables if t.preamble.name == "MyIngress.smac")
    forward_id = next(a.preamble.id for a in info.actions if a.preamble.name == "NoAction")
    sp = SwitchProc("--no-p4", "--device-id", "1")
    try:
        ch = grpc.insecure_channel(sp.address)
        stub = p4runtime_pb2_grpc.P4RuntimeStub(ch)
        q: queue.Queue = queue.Queue()
        stream = stub.StreamChannel(iter(q.get, None))
        m = p4r.StreamMessageRequest()
        m.arbitration.device_id = 1
        m.arbitration.election_id.low = 1
        q.put(m)
        assert next(stream).arbitration.status.code == 0
        req = p4r.SetForwardingPipelineConfigRequest(device_id=1, action=p4r.SetForwardingPipelineConfigRequest.VERIFY_AND_COMMIT)
        req.election_id.low = 1
        req.config.p4info.CopyFrom(info)
        req.config.p4_device_config = make_bundle(str(PROGRAM))
        stub.SetForwardingPipelineConfig(req)

        n = args.entries
        t0 = time.perf_counter()
        for i in range(n):
            write(stub, [entry_update(fwd_id, forward_id, i + 1, p4r.Update.INSERT)])
        single = n / (time.perf_counter() - t0)
        write(stub, [entry_update(fwd_id, forward_id, i + 1, p4r.Update.DELETE) for i in range(n)])

        t0 = time.perf_counter()
        for start in range(0, n, args.batch):
            write(stub, [entry_update(fwd_id, forward_id, i + 1, p4r.Update.INSERT)
                         for i in range(start, min(n, start + args.batch))])
        batched = n / (time.perf_counter() - t0)

        t0 = time.perf_counter()
        rows = sum(len(r.entities) for r in stub.Read(p4r.ReadRequest(
            device_id=1, entities=[p4r.Entity(table_entry=p4r.TableEntry(table_id=fwd_id))])))
        read_rate = rows / (time.perf_counter() - t0)
        q.put(None)
        ch.close()
    finally:
        sp.stop()
    print(f"p4runtime writes to p4mcc switch ({n} exact entries, table MyIngress.smac)")
    print(f"  one update per Write      : {single:10.0f} entries/s")
    print(f"  {args.batch:4d} updates per Write   : {batched:10.0f} entries/s")
    print(f"  wildcard Read of {rows} rows: {read_rate:10.0f} entries/s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
