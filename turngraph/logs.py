"""structlog configuration: called once, by entrypoints, never at import."""

from __future__ import annotations

import logging
import sys

import structlog

from turngraph.current_stderr import CurrentStderr
from turngraph.settings import LogFormat, Settings

__all__ = ["RQ_LOGGERS", "configure_logging"]

RQ_LOGGERS = ("rq.worker", "rq.job", "rq.scheduler", "rq.queue")
"""RQ's loggers, held to the application's level."""


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
        logger_factory=structlog.PrintLoggerFactory(file=CurrentStderr()),  # type: ignore[arg-type]
        cache_logger_on_first_use=True,
    )
    # RQ and the graph driver log through the standard library: their records go through
    # the same renderer, so a JSON stream stays JSON lines (RQ's own handler is never added:
    # it adds one only where no handler exists, and workers never pass it a level).
    handler = logging.StreamHandler(CurrentStderr())
    handler.setFormatter(
        structlog.stdlib.ProcessorFormatter(
            foreign_pre_chain=[*shared, structlog.stdlib.add_logger_name],
            processors=[structlog.stdlib.ProcessorFormatter.remove_processors_meta, renderer],
        )
    )
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    library_level = max(level, logging.WARNING)
    root.setLevel(library_level)
    # RQ sets its worker logger to INFO when imported (rq#1702); an explicit level keeps
    # that from happening and holds RQ to ours, whichever was imported first.
    for name in RQ_LOGGERS:
        logging.getLogger(name).setLevel(library_level)
