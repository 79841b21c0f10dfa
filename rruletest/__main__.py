"""``python -m rruletest`` runs the command line."""

import sys

from rruletest.cli import main

sys.exit(main())
