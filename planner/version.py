"""The planner's version: a leaf module, so that modules inside the package (batch's run identity) can read it
without importing the package itself (which imports them: an upward import)."""

__version__ = "0.1.0"
