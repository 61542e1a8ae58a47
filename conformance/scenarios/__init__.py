"""The scenario catalogue: data files read by `dshkit.conformance.scenario.load_catalogue`."""
