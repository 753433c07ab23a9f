"""One router per resource: scenes, objects, picks, select, and the service's own health and metrics."""
