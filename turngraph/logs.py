"""structlog configuration: called once, by entrypoints, never at import."""

from __future__ import annotations

import logging
import sys

import structlog

from turngraph.settings import LogFormat, Settings


def configure_logging(settings: Settings) -> None:
    """JSON lines in production, a readable console in a terminal."""
    level = logging.getLevelName(settings.log_level.upper())
    if not isinstance(level, int):
        level = logging.INFO
    fmt = settings.log_format
    if fmt is LogFormat.AUTO:
        fmt = LogFormat.CONSOLE if sys.stderr.isatty() else LogFormat.JSON
    renderer: structlog.typing.Processor = (
        structlog.dev.ConsoleRenderer()
        if fmt is LogFormat.CONSOLE
        else structlog.processors.JSONRenderer()
    )
    shared: list[structlog.typing.Processor] = [
        structlog.contextvars.merge_contextvars,
        structlog.processors.add_log_level,
        structlog.processors.TimeStamper(fmt="iso", utc=True),
    ]
    structlog.configure(
        processors=[*shared, structlog.processors.format_exc_info, renderer],
        wrapper_class=structlog.make_filtering_bound_logger(level),
        logger_factory=structlog.PrintLoggerFactory(file=sys.stderr),
        cache_logger_on_first_use=True,
    )
    # RQ logs through the standard library; route it at our level, same stream.
    logging.basicConfig(level=max(level, logging.WARNING), stream=sys.stderr, force=True)
