"""Test hooks, apart from the product: injected faults, model mutations and slowdowns.

Each is off unless its environment variable is set (``TEBENCH_TEST_FAULT``,
``TEBENCH_TEST_SLOWDOWN``); the self-tests use them to prove that the harness
catches what it claims to catch.
"""
