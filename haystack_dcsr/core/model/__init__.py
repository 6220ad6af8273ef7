"""The model: the model directory (``DCSRModel``), its towers and settings, int8, the cross-encoder, the hub."""
