"""Keeping results: the results file's reader and writer, merging shards, nightly history in SQLite.

Parent side, torch-free.
"""
