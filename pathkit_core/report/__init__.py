"""HTML report and figures of a run."""
