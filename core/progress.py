"""The one progress protocol: long core functions take `on_progress(done, total)` and call it as they go.

The CLI passes a rich progress bar (`core.cli.ui.progress_bar`), the app a Streamlit bar, tests a list's
append; core never knows which.
"""

from __future__ import annotations

from collections.abc import Callable

ProgressCallback = Callable[[int, int], None]
