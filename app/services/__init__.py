"""Use cases in plain values; each owns its transaction through a unit of work."""
