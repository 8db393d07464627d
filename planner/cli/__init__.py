"""The command-line interface: `planner evaluate | solve | pareto | fleet | batch | validate | calibrate`."""
