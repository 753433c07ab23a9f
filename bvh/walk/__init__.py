"""The one walk of every query: node layout, borrowed views, the traversal with its leaf test as a parameter."""
