"""A pathkit 0.1.0-era plugin (frozen test fixture): a demo dataset for the 0.1.0 example plugin's
slide-regression task, and a report metric."""
