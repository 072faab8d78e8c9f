"""The twin's console: ``inferbus serve`` also answers a small web page at ``/_inferbus/``.

It shows the topology with live counts (rules, queues, consumers, workflows), every dead-letter
queue's and the invalid-events queue's messages with their reasons, the manual reviews waiting
(approve, reject), recent executions with their stages and recent events on the bus; and it
redrives a dead-letter queue with one click. Plain HTML and script, no build step, nothing
fetched from elsewhere: it works offline. :mod:`.app` says how it is kept to its own page.
"""

from __future__ import annotations

from .app import CONSOLE_PATH, ConsoleApp
from .state import ConsoleError, ConsoleState

__all__ = ["CONSOLE_PATH", "ConsoleApp", "ConsoleError", "ConsoleState"]
