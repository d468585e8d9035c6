"""Diagnostics, clusters and (later) distances between measures."""
