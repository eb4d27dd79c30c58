"""The results file's schema: one typed declaration of every record and part, shared by worker and parent.

Torch-free. The worker returns these types, the runner builds case records from
them, the writer writes their ``to_dict()``, and readers get them back from
``from_dict``, validated from the same declarations (see :mod:`tebench.schema.records`).
"""
