"""The frame around words codexbridge hands a model, and who may be named in it. Pure.

Whatever codexbridge frames for a model — a message to Codex (`envelope.py`), mail handed
to Claude (`messages/render.py`), a handoff (`handoff/delta.py`, `handoff/deliver.py`) — the
sender's words sit between lines only codexbridge writes, and this module is the one
place that decides how (docs/conversations.md, "The envelope"):

* every frame line opens with the tag `[codexbridge <seal>]`, a seal of 6 random
  characters drawn for that one framing, after the words were written: no sender can
  know it, so a copy of a header or an end line inside the words never carries it;
* inside the words, every line that could pass for a frame line — it opens with
  `[codexbridge` (also behind spaces or invisible characters, or in fullwidth letters),
  or with a marker the frame around it uses — is quoted with `> `, so neither the model
  nor a person reading the TUI takes it for the real one; and the characters a terminal
  acts on are shown as their escapes (`host/text.for_terminal`): both TUIs print these
  words;
* "the human" is a label no sender can take: a sender's name with `human`, `user`,
  `system` or `codexbridge` in it is refused where mail is written (`label_problem`),
  and shown as the unverified claim it is where mail someone else wrote is read.

The Stop hook frames mail with it: standard library only, and no `typing` (the hook's
cost with mail is measured by bench/bench_inbox.py).
"""

from __future__ import annotations

import os

from ..host.text import for_terminal

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence

ALPHABET = "abcdefghijklmnopqrstuvwxyz0123456789"
MARK = "[codexbridge"  # how every frame line opens; a line of the words that does is quoted
QUOTE = "> "
SEAL_CHARS = 6


def draw(n: int) -> str:
    """`n` random characters of [a-z0-9]. os.urandom, not `secrets`: the Stop hook imports
    this (`secrets` pulls in hmac, random, hashlib); 256 % 36 = 4, a bias of no matter."""
    return "".join(ALPHABET[b % len(ALPHABET)] for b in os.urandom(n))


def new_seal() -> str:
    """The random part of one framing's tag: drawn after the words were written."""
    return draw(SEAL_CHARS)


def tag(seal: str) -> str:
    """What every line codexbridge writes into a frame opens with."""
    return f"{MARK} {seal}]"


# Blank-looking characters a line may open with and still read as opening with what
# follows: whitespace, controls, format characters (zero-width, bidi marks), and the
# Hangul / braille fillers fonts draw as nothing.
_INVISIBLE = " \t\x0b\x0c\u00a0\u115f\u1160\u2800\u3164\uffa0"


def _lead(line: str) -> str:
    """The start of `line` as a reader sees it: what looks blank dropped, width and case
    folded (a fullwidth `［ｃｏｄｅｘｂｒｉｄｇｅ` reads the same)."""
    i = 0
    while i < len(line) and (line[i] in _INVISIBLE or _invisible(line[i])):
        i += 1
    head = line[i:i + 48]
    if head.isascii():
        return head.casefold()
    import unicodedata

    return unicodedata.normalize("NFKC", head).casefold()


def _invisible(ch: str) -> bool:
    if ch.isascii():
        return ch.isspace() or not ch.isprintable()
    import unicodedata

    return unicodedata.category(ch) in ("Cc", "Cf", "Zs", "Zl", "Zp")


def looks_framed(line: str, markers: Sequence[str] = ()) -> bool:
    """Could `line` pass for a line of the frame: `[codexbridge…`, or one of `markers`
    (lower case) that the frame around these words uses for its own lines?"""
    lead = _lead(line)
    return lead.startswith("[codexbridge") or any(lead.startswith(m) for m in markers)


def quoted(words: str, markers: Sequence[str] = ()) -> str:
    """A sender's words as a frame carries them: what a terminal would act on shown as
    its escape, and every line that could pass for a frame line (`looks_framed`) quoted
    with `> `. Lines break wherever a reader may see a break (`str.splitlines`: CR,
    U+2028, …); the rest is left exactly as written."""
    words = for_terminal(words)
    lines = words.splitlines(keepends=True)
    forged = [looks_framed(line, markers) for line in lines]
    if not any(forged):
        return words
    return "".join(QUOTE + line if bad else line for line, bad in zip(lines, forged, strict=True))


def frame(head: Sequence[str], words: str, end: str, seal: str | None = None) -> str:
    """`head` (its first line tagged), a blank line, the quoted words, a blank line and
    the tagged `end` line: one message as the peer's model and the TUI show it."""
    mark = tag(seal or new_seal())
    first, *more = head
    return "\n".join([f"{mark} {first}", *more, "", quoted(words), "", f"{mark} {end}"])


def is_framed(text: str) -> bool:
    """A user message codexbridge wrote (a peer's, a notice): it opens with the mark."""
    return text.startswith(MARK)


def words_of(text: str) -> str:
    """The words inside a message `frame` wrote (`text` itself when it is not one)."""
    seal = text[len(MARK) + 1:len(MARK) + 1 + SEAL_CHARS]
    if (not text.startswith(f"{tag(seal)} ") or "\n\n" not in text
            or not all(ch in ALPHABET for ch in seal)):
        return text
    body = text.split("\n\n", 1)[1]
    end = body.rfind(f"\n\n{tag(seal)} ")
    return body[:end] if end >= 0 else body


# --- who may be named as the sender ------------------------------------------------------

# Only the human is "the human": a peer's chosen name must not read as them, nor as the
# bridge's own voice or a system instruction.
RESERVED = ("human", "user", "system", "codexbridge")


def label_problem(name: str) -> str | None:
    """Why `name` may not label a sender of mail, or None when it may."""
    import unicodedata

    flat = "".join(ch for ch in unicodedata.normalize("NFKC", name).casefold()
                   if ch.isalnum())
    for word in RESERVED:
        if word in flat:
            return (f"a sender's name may not contain {word!r}: mail is labelled as a peer "
                    "AI agent's, and only the human is the human")
    return None


def sender_label(name: str, valid: bool) -> str:
    """How a mail's sender is named in its frame: as it is when it is a valid, unreserved
    name (`valid`: the mailbox name rules hold); else as the unverified claim it is —
    a writer that bypassed `inbox push` can put anything in `from`."""
    if valid and label_problem(name) is None:
        return name
    shown = for_terminal(" ".join(name.split()))[:64]
    return f'an unverified sender calling itself "{shown}"'
