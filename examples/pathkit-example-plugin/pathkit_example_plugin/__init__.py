"""An example third-party pathkit plugin (see docs/plugin-authors.md)."""
