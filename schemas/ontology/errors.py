"""Typed errors of the ontology: a broken extension file is a configuration error."""

from __future__ import annotations

from turngraph.schemas.errors import ConfigurationError

__all__ = [
    "OntologyConflictError", "OntologyError", "OntologyFileEmptyError", "OntologyFileMissingError",
    "OntologyFileUnreadableError", "OntologyLoadError", "OntologyNamespaceError",
    "OntologyNoTriplesError", "OntologyParseError",
]  # fmt: skip


class OntologyError(ConfigurationError):
    """The ontology (ours or a user's extension) cannot be used."""


class OntologyLoadError(OntologyError):
    """A user-supplied Turtle file could not be loaded; the message says why and where."""


class OntologyFileMissingError(OntologyLoadError):
    """The extension file does not exist."""


class OntologyFileUnreadableError(OntologyLoadError):
    """The extension file exists but cannot be read (permissions, a directory, encoding)."""


class OntologyFileEmptyError(OntologyLoadError):
    """The extension file is empty or holds only whitespace and comments."""


class OntologyParseError(OntologyLoadError):
    """The extension file is not valid Turtle."""


class OntologyNoTriplesError(OntologyLoadError):
    """The extension file parsed but declares nothing."""


class OntologyNamespaceError(OntologyLoadError):
    """The extension file declares classes or properties in a namespace we don't know."""


class OntologyConflictError(OntologyLoadError):
    """The extension redefines one of our classes or properties incompatibly."""
