import sys

from turngraph.console import main

sys.exit(main())
