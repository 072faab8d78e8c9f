"""The one error the scaffold raises: what is wrong and what to do, on one line."""

from __future__ import annotations

__all__ = ["ScaffoldError"]


class ScaffoldError(ValueError):
    """A request the scaffold cannot carry out; the message says what to do instead.

    The CLI prints it as one line on stderr and exits with code 2; nothing has been written.
    """
