"""Distilled memory, made by jobs on the ``maintenance`` RQ queue (SPEC §9).

One module per concept (summaries, compaction, promotion, recap, rolling context, the
triggers, the job functions, on-demand asks); the map: docs/architecture.md ("Layout").
"""
