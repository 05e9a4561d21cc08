"""Runnable scoreboards against the real pinned codex app-server and the offline mock.

Run one from the repository root: `.venv/bin/python -m spikes.spike_multiclient`.
"""
