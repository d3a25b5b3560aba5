"""The ``p4mcc`` command line: the dispatcher and the commands that run whole scenarios.

It sits on top of every other package: ``sim`` drives :mod:`netsim`, ``run``
drives :mod:`emulation`, ``report`` draws a results or sweep folder.  Lower
packages register their own commands (``ctl``, ``host``, ``switch``...)
through the ``p4mcc.commands`` entry-point group.
"""
