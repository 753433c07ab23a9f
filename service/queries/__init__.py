"""What a request does, shared by HTTP and the live channel."""
