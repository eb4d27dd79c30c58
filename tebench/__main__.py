"""Allow ``python -m tebench``."""

from tebench.cli import main

raise SystemExit(main())
