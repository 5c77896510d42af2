"""``python -m interfpred`` runs the command line."""

import sys

from interfpred.cli import main

sys.exit(main())
