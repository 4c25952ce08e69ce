"""devall's performance harness: `make bench` (or `python -m benchmarks`) from the repository root.

Each scenario runs devall and what it is compared with in the same process run, alternating
between them, and reports medians and their ratio against the target of the scenario.
"""
