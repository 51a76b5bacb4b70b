"""kafka-mc models: the contract (core, protocol, config), the registry, and the models."""
