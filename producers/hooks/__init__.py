"""Editor lifecycle hooks: what ``turngraph hook EVENT`` reads and writes.

``payload`` parses what an editor sends on stdin, ``transcripts`` reads the turns a
transcript gained since the last call (``offsets`` keeps where each one stopped),
``editors`` knows each editor's configuration and context-injection format, ``config``
installs and removes our entries in the editors' files, ``runner`` carries out one call.
Nothing here imports worker code: the hook process stays small.
"""
