"""Test-wide guards (network blocked except loopback, offline model hubs) live in the
repository's root ``conftest.py``, which pytest loads for ``tests/`` and for the
doctests of ``hmem/`` alike.
"""
