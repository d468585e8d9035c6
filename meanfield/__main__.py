"""``python -m meanfield``: the same as the ``meanfield`` console script."""
import sys

from meanfield.cli import main

sys.exit(main())
