"""Ingest: the RQ job that turns a TurnEvent into episodes, entities and facts."""
