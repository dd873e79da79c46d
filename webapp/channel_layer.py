"""The Channels layer over Redis, with a bounded connection pool that waits instead of failing.

channels_redis opens one redis-py pool per event loop; redis-py's default pool refuses the 101st concurrent
command with ``MaxConnectionsError``. A burst of viewers (each handshake joins a group, each close leaves it)
then fails handshakes with a 500 and leaves dead group members behind. Here the pool holds up to
``pool_size`` connections and a command that finds none free waits up to ``pool_timeout`` seconds for one.
"""
from __future__ import annotations

from channels_redis.core import RedisChannelLayer
from redis.asyncio import BlockingConnectionPool


class PooledRedisChannelLayer(RedisChannelLayer):
    def __init__(self, *args, pool_size: int = 200, pool_timeout: float = 10.0, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.pool_size = pool_size
        self.pool_timeout = pool_timeout

    def create_pool(self, index: int):
        host = dict(self.hosts[index])
        if "address" not in host:  # sentinels or host/port pairs: channels_redis's own pool
            return super().create_pool(index)
        address = host.pop("address")
        return BlockingConnectionPool.from_url(address, max_connections=self.pool_size, timeout=self.pool_timeout,
                                               **host)
