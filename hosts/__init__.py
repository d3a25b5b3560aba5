"""Host side of p4mcc: the wire codec, the sans-I/O protocol cores and their drivers."""
