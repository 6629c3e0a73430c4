"""Engine glue: the Spark session with the project's jars, and driver-side micro-batch state."""
