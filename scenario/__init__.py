"""The scenario model: what network to build, which sessions and flows to run, which faults to inject.

Both engines (``netsim`` in virtual time, ``emulation`` in Mininet) read a
scenario file through :func:`scenario.model.load_scenario`; nothing here runs
anything.  ``shapes`` generates topologies, ``faults`` holds the fault,
policing and membership parts, ``capture`` the per-port pcap filters.
"""
