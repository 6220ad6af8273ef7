"""Standalone trainer for DCSR / DPR towers with the MEQ query-side loss.

``python -m haystack_dcsr.training --help`` (or ``dcsr-train --help``) lists its commands.
"""
