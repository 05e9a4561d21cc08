"""Text that can be written, and text that can be shown.

`writable`: outside JSON may carry a lone UTF-16 surrogate. `for_terminal`: text from a
model or a peer (Codex's reply, a mail, a thread's name) reaches a person's terminal
with no control sequence left in it. Standard library only: the Stop hook imports it.
"""

from __future__ import annotations

import re


def writable(value: str) -> str:
    """`value` with every lone surrogate as U+FFFD.

    A `\\ud800` escape with no partner (a JS writer cutting an emoji in half) is valid
    JSON, and json.loads turns it into a str that cannot be encoded to UTF-8: every later
    write of it (a record, a delta file, a ledger) would fail, far from where it came in.
    """
    if value.isascii():
        return value
    return value.encode("utf-8", "surrogatepass").decode("utf-8", "replace")


# What a terminal would act on instead of showing: every C0 control but tab and newline
# (ESC starts CSI / OSC / DCS sequences, BEL ends an OSC, BS and DEL rub out) and a CR
# that does not end a line (it rewrites the line from its start), DEL, every C1 control
# (U+009B is an 8-bit CSI, U+009D an OSC), and the bidi embeddings, overrides and
# isolates that reorder what is shown (U+202A-U+202E, U+2066-U+2069): text that reads
# one way and says another ("Trojan Source").
_ACTED_ON = re.compile(
    "\r(?!\n)|[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def _escape(match: re.Match[str]) -> str:
    return f"\\u{ord(match.group()):04x}"


def for_terminal(text: str) -> str:
    """`text` as codexbridge prints it: every character a terminal would act on shown as
    its escape (ESC as `\\u001b`, BEL as `\\u0007`, U+202E as `\\u202e`); newlines, tabs
    and the CR of a CRLF are kept, and a lone surrogate becomes U+FFFD.

    The escapes are JSON's: run over JSON text, the result is still JSON that reads back
    to the same value (JSON writers escape C0 controls already; C1 controls and bidi
    characters they leave raw), so `--json` output goes through here too."""
    return _ACTED_ON.sub(_escape, writable(text))
