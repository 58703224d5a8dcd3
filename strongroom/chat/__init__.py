"""Chat (D44): answers grounded in a project's documents, with citations, in conversations."""
