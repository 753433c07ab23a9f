"""The service past one machine: a local S3-compatible store and Ray cluster for development and tests."""
