"""Allow ``python -m tebench``.

:func:`tebench.cli.main` checks that the parent side's packages are installed (:mod:`tebench.installed`):
``--help`` needs only what the parser imports, a command everything.
"""

from tebench.cli import main

raise SystemExit(main())
