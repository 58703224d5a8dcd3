"""HTTP layer: the app factory, the shared request path, problems, pagination, OpenAPI."""
