"""The recall worker: its in-memory index, scoring and search (the loop is in ``worker``)."""
