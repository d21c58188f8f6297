"""Editor lifecycle hooks: what ``turngraph hook EVENT`` reads and writes.

``payload`` parses what an editor sends, ``transcripts`` reads what a transcript gained,
``editors`` and ``config`` know and install each editor's configuration, ``runner``
carries out one call. Nothing here imports worker code: the hook process stays small.
"""
