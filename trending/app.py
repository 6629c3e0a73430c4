"""The application file ``spark-submit`` runs: the ``trending`` command line.

    spark-submit --master spark://HOST:7077 $(trending spark-args) run hashtags ...

``trending spark-args`` prints the dependencies (``--packages``, ``--jars``) and this file's path.
Run as a script, Python puts this file's folder (the package's own) first on ``sys.path``, where
``config``, ``metrics``, ``windows`` ... would shadow top-level modules of those names: it is
taken off before anything else is imported.
"""

import os
import sys

_HERE = os.path.dirname(os.path.realpath(__file__))
sys.path[:] = [entry for entry in sys.path if os.path.realpath(entry or ".") != _HERE]

from trending.cli import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main())
