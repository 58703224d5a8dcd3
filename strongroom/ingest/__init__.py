"""Bytes to passages (D42, D43): what a file is, its text page by page within the bounds of
one document, and passages cut from it. Plain data in and out; every function blocks, so jobs
run them off the event loop."""
