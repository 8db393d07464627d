"""The `planner` command line: `catalog | models | evaluate | validate | calibrate | solve | pareto | fleet | batch`.

``main`` builds the parser and runs a command; each command is a module (``catalog``, ``evaluate``, ``validate``,
``solve``, ``pareto``, ``fleet``, ``batch``); ``plan`` holds the single-job request that ``solve`` and ``pareto``
share, and ``common`` the argument types, output helpers and exit codes every command uses.
"""
