"""Allow ``python -m tebench``."""

from tebench.installed import require

require()  # before the CLI imports anything: a Python without tebench's packages gets a message, exit 2

from tebench.cli import main  # noqa: E402

raise SystemExit(main())
