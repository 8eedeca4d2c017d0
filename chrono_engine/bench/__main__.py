"""``python -m chrono_engine.bench``: the harness's command line (the same as ``chrono bench``)."""
import sys

from .run import main

main()
sys.exit(0)
