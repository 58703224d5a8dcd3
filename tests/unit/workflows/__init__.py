"""Tests of the offline workflow analyses."""
