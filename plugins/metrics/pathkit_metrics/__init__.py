"""pathkit metrics plugins: one module per plugin, each an entry point in the `pathkit` group."""
