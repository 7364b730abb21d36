"""Foundation layer: argument checks, randomness and devices, statistics, claims."""
