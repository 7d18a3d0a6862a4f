"""envdoctor: doctor and install advisor for PyTorch on NVIDIA GPU machines."""

__version__ = "0.1.0"
