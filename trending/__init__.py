"""trending: exact windowing for Spark Structured Streaming on Kafka."""

__version__ = "0.1.0"
