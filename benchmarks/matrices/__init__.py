"""Matrix presets (installed as tebench.presets)."""
