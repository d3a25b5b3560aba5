"""The results layer: what a run writes (``results``), its plots and its reports.

Named ``reporting`` rather than ``results`` because ``results/`` is where runs
write their output folders.  Both engines feed a
:class:`reporting.results.Recorder`; ``p4mcc report`` re-renders a folder.
"""
