"""Planning: matrix file -> checked, gated, sharded cases; the mode and recipe registries; the machine.

Parent side, torch-free: everything here runs before any worker starts (a bad
matrix is refused before torch is imported or the hardware probed).
"""
