"""P4Runtime for the built-in switch: P4Info generation and the gRPC service.

* :mod:`.p4info` -- P4Info from the front end's IR, as p4c writes it;
* :mod:`.ids` -- the spec's id prefixes and p4c's id hashing;
* :mod:`.schema` -- an id-indexed view of one P4Info, and bytestring rules;
* :mod:`.device` -- pipeline life cycle and every entity's Write/Read, without gRPC;
* :mod:`.entries` -- entity <-> runtime API conversions and validity rules;
* :mod:`.digests` -- DigestList batching and acknowledgements;
* :mod:`.devconfig` -- the device configs the switch accepts (P4 source, bundles);
* :mod:`.arbitration` -- primary/backup election (pure);
* :mod:`.server` -- the gRPC service over a device.

docs/p4runtime.md describes the behaviour a controller sees.
"""
