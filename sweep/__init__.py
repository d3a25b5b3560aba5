"""Parameter sweeps over scenarios (``p4mcc sweep``)."""
