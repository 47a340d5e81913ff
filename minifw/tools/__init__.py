"""Layer 5: the profiler and graph drawing; imported on first use, never from below."""
