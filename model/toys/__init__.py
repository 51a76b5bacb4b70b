"""Small reference models for testing and benchmarking the explorers."""
