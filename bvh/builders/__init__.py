"""Building and refitting trees: builders see only boxes and centroids."""
