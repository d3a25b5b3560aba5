"""P4Runtime controller (finsy client) and the ``p4mcc ctl`` CLI."""
