"""Standalone trainer for DCSR / DPR towers with the MEQ query-side loss (``python -m trainer --help``)."""
