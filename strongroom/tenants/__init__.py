"""Tenants and their users."""
