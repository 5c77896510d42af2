"""``python -m interfpred`` runs the command line."""

import sys

from interfpred.cli import main

if __name__ == "__main__":
    sys.exit(main())
