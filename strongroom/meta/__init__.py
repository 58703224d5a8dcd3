"""Meta: who am I."""
