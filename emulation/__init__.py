"""Mininet emulation: a scenario run with real Linux hosts, P4 switch processes and TCP.

``plan`` computes what to build (pure), ``mininet_net`` builds it, ``run``
drives the run, ``faults`` injects faults and supervises, ``runstate``
records what was started so ``p4mcc stop`` ends exactly that.
"""
