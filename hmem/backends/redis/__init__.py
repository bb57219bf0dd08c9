"""Redis backends (needs the ``redis`` extra: ``pip install 'hmem[redis]'``).

* :mod:`~hmem.backends.redis.client` — ``connect_redis`` (single node or Redis Cluster), URL masking, error mapping
* :mod:`~hmem.backends.redis.keys` — the key layout (``<prefix>:{<user>}:…``)
* :mod:`~hmem.backends.redis.sessions` — ``RedisSessionStore``
* :mod:`~hmem.backends.redis.summaries` — ``RedisSummaryStore``
* :mod:`~hmem.backends.redis.profile` — ``RedisProfileStore``
* :mod:`~hmem.backends.redis.fallback` — ``open_redis_stores`` (all three, optional in-process fallback)

Nothing is imported here, so ``import hmem.backends.redis`` works without redis-py.
See docs/redis.md.
"""
