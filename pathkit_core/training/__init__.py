"""Training: the Accelerate-driven fit/predict loop, feature bags, checkpoints."""
