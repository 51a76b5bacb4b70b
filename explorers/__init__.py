"""Explorers: search a model's state space and check its properties (they see model.core only)."""
