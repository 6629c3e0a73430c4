"""Text rules shared by the Python jobs, the Spark functions and the tests."""
