"""Embedded services: a real Redis-protocol server and a real Bolt graph server,
started by the project itself from pip-installed packages when no URLs are configured."""

from turngraph.embedded.graph_server import GraphServer
from turngraph.embedded.redis_server import RedisServer
from turngraph.embedded.services import EmbeddedServices, ServiceEndpoints

__all__ = ["EmbeddedServices", "GraphServer", "RedisServer", "ServiceEndpoints"]
