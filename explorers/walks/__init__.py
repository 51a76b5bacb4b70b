"""Random explorers: walks from the initial states (``simulate``), swarm walks that leave out
families of actions (``swarm``) and hypothesis's stateful testing (``stateful``)."""
