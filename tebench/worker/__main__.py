"""``python -m tebench.worker``: run one case in this process (see :mod:`tebench.worker.main`)."""

import os

from tebench.worker.main import main

code = main()
# The result is on disk and the streams are flushed. Interpreter teardown
# with Transformer Engine loaded took ~6 s per case on the H200, paid by
# every case of a matrix; skip it.
os._exit(code)
