"""The live channel: one WebSocket per editor, the scene's events pushed."""
