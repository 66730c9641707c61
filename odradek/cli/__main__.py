"""`python -m odradek.cli`: the `odradek` command."""

import sys

from odradek.cli.main import main

sys.exit(main())
