"""The built-in P4_16 front end and v1model software switch."""
