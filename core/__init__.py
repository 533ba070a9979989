"""trajreview core: import, score and measure WebArena agent runs into one DuckDB file.

`core` is UI-free by contract: it never imports streamlit or plotly (tests/test_architecture.py).
"""

__version__ = "0.1.0"
