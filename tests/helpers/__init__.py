"""What the tests share: projects, servers, backends, reports, interpreters (imported by name:
``from helpers.server_support import connect``; ``tests/`` is on pytest's ``pythonpath``)."""
