"""pathkit core: the plugin contract, the plugin manager and the shared machinery."""

import pluggy

__version__ = "0.2.0"

PROJECT_NAME = "pathkit"
hookimpl = pluggy.HookimplMarker(PROJECT_NAME)

__all__ = ["__version__", "hookimpl", "PROJECT_NAME"]
