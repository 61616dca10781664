"""Presentation of results: console tables (rich), JSON, CSV."""
