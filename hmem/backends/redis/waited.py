"""Writes that wait for replicas (``HMEM_REDIS_WAIT_REPLICAS``): a Lua script, a ``DEL``
or a watched ``MULTI``/``EXEC``, each followed by ``WAIT`` on the same connection of the
master that took the write (:class:`~hmem.backends.redis.client.ReplicaWait`; without it,
plain writes). Used by every Redis store of hmem.

Example::

    from hmem.backends.redis.client import ReplicaWait, connect_redis
    client = connect_redis("redis://127.0.0.1:6379/0")
    delete_and_wait(client, ["hmem:{u1}:sum:s1"], wait=ReplicaWait(1, 500), label="127.0.0.1:6379")
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import redis
from redis.commands.core import Script
from redis.connection import AbstractConnection

from hmem.backends.redis.client import RedisClient, ReplicaWait, on_node
from hmem.errors import BackendUnavailable

__all__ = ["delete_and_wait", "exec_and_wait", "run_script"]


def run_script(client: RedisClient, script: Script, keys: Sequence[str], args: Sequence[Any], *,
               wait: ReplicaWait, label: str) -> Any:
    """Run a registered Lua ``script``; with ``wait`` enabled, pipeline ``WAIT`` behind it on
    the same connection of the key's master (one round trip plus the replicas' delay) and
    raise :class:`BackendUnavailable` when too few replicas confirmed (see :class:`ReplicaWait`)."""
    if not wait.enabled:
        return script(keys=keys, args=args)

    def write(node: redis.Redis) -> Any:
        for _ in range(2):  # a master promoted since the script was loaded has not seen it yet
            try:
                return _then_wait(node, ("EVALSHA", script.sha, len(keys), *keys, *args), wait=wait, label=label)
            except redis.exceptions.NoScriptError:
                node.script_load(script.script)
        raise BackendUnavailable(f"Redis at {label} keeps forgetting hmem's Lua scripts (SCRIPT FLUSH?); retry")

    return on_node(client, keys[0], write)


def delete_and_wait(client: RedisClient, keys: Sequence[str], *, wait: ReplicaWait, label: str) -> int:
    """``DEL keys`` (one slot: one user's hash tag), followed by ``WAIT`` on the same
    connection of the keys' master when ``wait`` is enabled; how many keys existed."""
    if not wait.enabled:
        return int(client.delete(*keys))

    return int(on_node(client, keys[0], lambda node: _then_wait(node, ("DEL", *keys), wait=wait, label=label)))


def _then_wait(node: redis.Redis, command: tuple[Any, ...], *, wait: ReplicaWait, label: str) -> Any:
    """``command`` and ``WAIT`` in one pipeline on ``node``: the command's reply, once enough
    replicas confirmed it (:meth:`ReplicaWait.check` raises otherwise)."""
    pipe = node.pipeline(transaction=False)
    pipe.execute_command(*command)  # type: ignore[no-untyped-call]
    pipe.execute_command("WAIT", wait.replicas, wait.timeout_ms)  # type: ignore[no-untyped-call]
    result, acked = pipe.execute()
    wait.check(acked, label)
    return result


def exec_and_wait(conn: AbstractConnection, commands: Sequence[tuple[Any, ...]], *, wait: ReplicaWait,
                  label: str) -> bool:
    """``MULTI`` ``commands`` ``EXEC`` ``WAIT`` on ``conn``, a connection that holds the
    caller's ``WATCH`` (a pipeline's ``connection`` after ``watch()``): False when the
    ``WATCH`` fired (nothing written). A ``WAIT`` inside ``MULTI`` would not block, and
    one on another connection would not cover this write, hence the raw commands."""
    packed = conn.pack_commands(  # type: ignore[no-untyped-call]
        [("MULTI",), *commands, ("EXEC",), ("WAIT", wait.replicas, wait.timeout_ms)])
    conn.send_packed_command(packed)  # type: ignore[no-untyped-call]
    replies: list[Any] = []
    for _ in range(len(commands) + 3):
        try:
            replies.append(conn.read_response())
        except redis.exceptions.ResponseError as exc:  # read every reply: the connection stays in step
            replies.append(exc)
    for reply in replies:
        if isinstance(reply, Exception):
            raise reply
    if replies[-2] is None:  # EXEC answered nil: a watched key changed
        return False
    wait.check(replies[-1], label)
    return True
