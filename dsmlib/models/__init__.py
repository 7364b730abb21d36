"""Models and data layer: seeded networks, data sets, and the settings of the noise chapters."""
