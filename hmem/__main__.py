"""``python -m hmem …`` is the ``hmem`` command."""

import sys

from hmem.cli.main import main

sys.exit(main())
