"""``python -m pytest_mcp_server`` runs the console script."""

import sys

from pytest_mcp_server.cli import main

sys.exit(main())
