"""Credits (D21): every 2xx live call bills its cost to its tenant."""
