"""The request path every capability takes, and what it is built of: capability declarations,
pagination, multipart uploads, Server-Sent Events, OpenAPI, error pages. The app factory that
installs it is strongroom.app."""
