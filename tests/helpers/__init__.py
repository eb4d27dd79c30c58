"""Builders the test modules share, one kind of thing per module (``from helpers.frame_rows import case_row``).

``tests/`` is on the import path ([tool.pytest.ini_options] pythonpath), as for ``conftest``.
"""
