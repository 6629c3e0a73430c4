"""Sub-commands of the ``trending`` command line; each module has ``register(subparsers)``."""
