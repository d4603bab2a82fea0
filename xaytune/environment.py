"""Environments: the stateful world a task's tools act on, and how to write one.

A suite's task may declare tools (JSON schemas the model is offered) and name an
environment that implements them. The environment is a class (or factory) registered
with :func:`environment` or named by dotted path, built with the task's params afresh
for every attempt; an instance meets the :class:`Environment` protocol: ``tools()``
(tool name -> the function that runs it, called with the call's arguments as keyword
arguments; raising is a tool error the model sees) and ``state()`` (a JSON snapshot
recorded in the trajectory after each user turn)::

    from xaytune.environment import environment

    @environment(version="1")
    class Counter:
        def __init__(self, *, start: int = 0) -> None:
            self.value = start

        def tools(self):
            return {"add": self.add}

        def state(self):
            return {"value": self.value}

        def add(self, amount: int) -> str:
            self.value += amount
            return str(self.value)

Its code identity is pinned into each task of a suite when the suite is built, so a
changed environment is a different suite digest (see :mod:`xaytune.plugins`).
"""

from xaytune.plugins import Environment, environment

__all__ = ["Environment", "environment"]
