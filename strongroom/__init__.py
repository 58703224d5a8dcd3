"""Strongroom: a self-hosted, Kubernetes-native multi-tenant API platform."""

__version__ = "0.1.0"
