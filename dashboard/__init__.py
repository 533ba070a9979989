"""The trajreview Streamlit app. Reads and writes only through `core`."""
