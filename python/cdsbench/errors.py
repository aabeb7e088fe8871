"""Errors the command line reports as one line and exit status 2 (bad input, never a traceback)."""


class UsageError(Exception):
    """Bad input: an unknown experiment file, a bad grid, bad SQL, an unknown step or option."""
