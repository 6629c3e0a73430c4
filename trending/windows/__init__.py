"""The pure windowing core: no Spark, no Kafka imports.

Time is integer milliseconds and every window is half-open ``[start, end)``.
"""
