"""Click logs: positions, propensities, position-bias corrections."""
