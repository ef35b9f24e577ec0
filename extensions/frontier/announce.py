"""The signals the frontier sends (through the crawler's signal manager)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from scrapy import Request, signals
from scrapy.exceptions import IgnoreRequest
from twisted.python.failure import Failure

from extensions.signals import host_assigned


class FrontierSignals:
    """``host_assigned`` for a host given a queue; ``request_scheduled`` and
    ``request_dropped`` for a link the frontier files itself, as
    ``engine.crawl`` sends them. Nothing is sent until :attr:`send` is set
    (the crawler's ``send_catch_log``)."""

    def __init__(self) -> None:
        self.send: Callable[..., Any] | None = None
        self.spider: Any = None

    def host_assigned(self, host: str) -> None:
        if self.send is not None:
            self.send(host_assigned, host=host)

    def scheduled(self, request: Request) -> bool:
        """Whether no receiver of ``request_scheduled`` refused ``request`` (IgnoreRequest)."""
        if self.send is None:
            return True
        for _, result in self.send(signals.request_scheduled, request=request, spider=self.spider,
                                   dont_log=IgnoreRequest):
            if isinstance(result, Failure) and isinstance(result.value, IgnoreRequest):
                return False
        return True

    def dropped(self, request: Request) -> None:
        if self.send is not None:
            self.send(signals.request_dropped, request=request, spider=self.spider)
