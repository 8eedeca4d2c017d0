"""``python -m chrono_engine.cli``: the ``chrono`` command."""
import sys

from . import main

sys.exit(main())
