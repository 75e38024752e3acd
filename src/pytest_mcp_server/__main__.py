"""``python -m pytest_mcp_server`` runs the console script."""

import sys

from .cli import main

sys.exit(main())
