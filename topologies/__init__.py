"""Scenarios, the Mininet builder, the experiment runner, results and plots."""
