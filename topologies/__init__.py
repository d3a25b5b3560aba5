"""The scenario files (``topologies/scenarios/``): examples, the paper's set-ups, fault drills.

Data only.  The scenario model is :mod:`scenario`, the Mininet runtime
:mod:`emulation`, the results layer :mod:`reporting`.
"""
