"""Judging stored results: statistics, loss-parity verdicts, comparisons of runs, A/B runs.

Parent side, torch-free.
"""
