"""RocketMQ's transactional messages (half messages, op messages, check-back) as a kafka-mc model,
registered through the ``kafka_mc.models`` entry point as a third-party package would be."""
