"""Expected values at scale: the vector stream, the reference cross-check, size limits, Dask."""
