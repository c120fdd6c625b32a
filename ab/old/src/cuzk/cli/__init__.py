"""The ``cuzk`` command line."""
