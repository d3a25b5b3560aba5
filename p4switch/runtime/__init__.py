"""Target-side state of the v1model switch, independent of the P4 front end.

Bit-vector helpers, hash algorithms, table store, stateful externs
(registers, counters, meters), the packet replication engine and clone
sessions.  The interpreter (``p4switch.interp``) lowers a program onto these.
"""
