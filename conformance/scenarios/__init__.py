"""The scenario catalogue: data files read by `conformance.scenario.load_catalogue`."""
