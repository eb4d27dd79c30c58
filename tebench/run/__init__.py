"""Running a matrix, parent side: one worker process per case, the OUT directory and its lock, resume.

Torch-free. The worker side of each case is :mod:`tebench.worker`; the two speak
through the files and exit codes of :mod:`tebench.schema.protocol`.
"""
