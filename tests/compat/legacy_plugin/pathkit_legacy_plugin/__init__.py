"""A pathkit 0.1.0-era plugin (frozen test fixture): a slide-score task, its demo, head and metrics."""
