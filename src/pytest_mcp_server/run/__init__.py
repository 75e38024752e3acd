"""Running pytest: argv and exit statuses, process groups, the project's interpreter,
the plugin loaded into the child pytest and its record stream, stack dumps, coverage
and git. Imports the domain and the engine, never the app or the adapters."""
