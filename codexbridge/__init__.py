"""codexbridge: two running coding agents, one live conversation.

Kept import-free on purpose: the Stop hook and `talk say` start through this
package, and every import here is paid on each Claude Code stop.
"""

__version__ = "0.1.0"
