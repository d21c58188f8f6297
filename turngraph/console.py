"""The ``turngraph`` console script: ``turngraph recall``, ``publish`` and ``status``
through the running endpoint when it answers (``turngraph.fast_path``: standard library only),
everything else, and these when no endpoint answers, through the full command line
(``turngraph.cli.main``: argparse, the stop-signal handling, the command's own code
path).
"""

from __future__ import annotations

import sys

from turngraph.fast_path import answer, fast_request

__all__ = ["main"]


def main() -> int:
    """Run ``turngraph`` with ``sys.argv``: through the endpoint when it can, else the full
    command line."""
    argv = sys.argv[1:]
    fast = fast_request(argv)
    if fast is not None:
        try:
            status = answer(*fast)
        except BrokenPipeError:  # `turngraph recall x | head`: the reader has had enough
            from turngraph.cli import output_closed

            return output_closed()
        except KeyboardInterrupt:
            print(f"turngraph {fast[0]}: stopped (SIGINT)", file=sys.stderr)
            return 130
        if status is not None:
            return status
    from turngraph.cli import main as full

    return full(argv)
