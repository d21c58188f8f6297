import sys

from turngraph.cli import main

sys.exit(main())
