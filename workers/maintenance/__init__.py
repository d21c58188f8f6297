"""Distilled memory, made by jobs on the ``maintenance`` RQ queue (SPEC §9).

One module per concept: ``turns`` (a session's turns read back from the graph),
``extractive`` and ``llm_summary`` (the two summarizers), ``summaries`` (making and storing
a ConversationSummary), ``compaction`` (summaries → one DecisionRecord per topic),
``promotion`` (curated memories, auto-promoted directives, ownership context), ``recap``
(a budgeted recap of a session), ``rolling`` (the rolling context of a long session),
``triggers`` (what an ingested batch asks for), ``jobs`` (the RQ job functions) and
``asks`` (on-demand requests from clients, admitted into jobs as turns are).
"""
