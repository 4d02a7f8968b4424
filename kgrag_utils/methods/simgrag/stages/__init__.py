"""The stages of the simgrag algorithm, one module each (the method class in `../method.py` runs them)."""
