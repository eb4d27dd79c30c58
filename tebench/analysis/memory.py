"""What a case's peak memory is made of, from the parts the worker counted (CUDA only).

Between two steps the allocator holds the parameters, the FP8 weights and
caches, the gradients (set to None only at the next step's start), the
optimizer's state and a rest (the batches, buffers, the loss). What the peak
adds on top of that is the step's own: activations saved for the backward and
the kernels' workspace. Each part is a storage counted once by the worker; the
rest and the activations are differences, so the parts add up to the peak.
"""

from __future__ import annotations

from tebench.schema.records import Memory

PARTS: tuple[tuple[str, str, str], ...] = (
    ("params", "parameters (high precision)", "#1f77b4"),
    ("fp8_weights", "FP8 weights, copies and transposes", "#d62728"),
    ("grads", "gradients", "#ff7f0e"),
    ("optimizer", "optimizer state", "#8c564b"),
    ("held_other", "batches and buffers held between steps", "#7f7f7f"),
    ("activations", "activations and workspace", "#2ca02c"),
)
"""Every part, in the order reports stack them: (key, label, colour)."""


def composition(memory: Memory | None) -> dict[str, float] | None:
    """Bytes of each part of :data:`PARTS`, summing to the peak; None where the worker did not count them."""
    if memory is None or memory.kind != "cuda" or memory.between_steps_bytes is None \
            or memory.peak_allocated_bytes is None or memory.params_bytes is None:
        return None
    counted = {
        "params": memory.params_bytes or 0.0,
        "fp8_weights": memory.fp8_weight_bytes or 0.0,
        "grads": memory.grads_bytes or 0.0,
        "optimizer": memory.optimizer_bytes or 0.0,
    }
    held = memory.between_steps_bytes
    # Storages shared with something the allocator does not own (none in tebench's cases) could make
    # the counted parts exceed what is held; the rest is then 0, not negative.
    counted["held_other"] = max(0.0, held - sum(counted.values()))
    counted["activations"] = max(0.0, memory.peak_allocated_bytes - max(held, sum(counted.values())))
    return counted
