"""Injection scanners, one per module behind the `Scanner` protocol (scanners/base.py)."""
