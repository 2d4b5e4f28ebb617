"""Spiders of the nearDupe demo project."""
