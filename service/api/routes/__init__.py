"""One router per resource: scenes, objects, picks, select, render, the viewer page, and the service's own
health and metrics."""
