"""Discrete-event simulator running p4mcc's protocol cores and P4 program at scale."""
