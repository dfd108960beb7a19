"""Built-in reliability tests, one per file."""
