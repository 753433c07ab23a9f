"""Running the service: metrics, memory, warm-up, sample scenes."""
