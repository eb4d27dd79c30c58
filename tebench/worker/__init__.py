"""The worker: everything that runs inside one case's process, and the only package that imports torch.

``python -m tebench.worker`` runs one case (:mod:`tebench.worker.main`): it builds
the model (:mod:`tebench.worker.models`), trains, times and validates it
(:mod:`tebench.worker.case`) and writes raw measurements for the parent.
``python -m tebench.worker.probe`` detects the machine. Transformer Engine (and any
later backend) is imported here and nowhere else; ``tests/test_boundary.py``
checks that over the whole tree.
"""
