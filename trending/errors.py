"""Errors the command line reports as one clear line (no traceback)."""


class UserError(Exception):
    """Something the user can fix: a bad flag, a missing tool or jar, a taken port.

    The message says what is wrong and what to run.
    """
