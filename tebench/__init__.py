"""tebench: a benchmark harness for NVIDIA Transformer Engine against plain PyTorch."""

__version__ = "0.1.0"
