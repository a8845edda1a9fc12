"""``python -m mxsim.cli``: the ``mxsim`` command, as the console script runs it."""

import sys

from . import main

sys.exit(main())
