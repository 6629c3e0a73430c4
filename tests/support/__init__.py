"""Helpers for tests: no fixtures, no test cases."""
