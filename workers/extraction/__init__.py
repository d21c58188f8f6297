"""Extraction: turn text into typed entities and facts of our ontology."""
