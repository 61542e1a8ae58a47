"""`python -m dshkit`: the `dshkit` command."""

import sys

from dshkit.cli import main

sys.exit(main())
