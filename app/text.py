"""One rule for every string a client or an operator hands the service.

Every string (identifier, free text, card, filter, path segment) must be valid Unicode
without control characters: no NUL, no C0 or C1 control, no DEL, no lone surrogate (a
JSON body may spell one as ``"\\ud800"``; it cannot be stored, hashed or logged as text).
Identifiers must also match ``IDENTIFIER`` as a whole: ``fullmatch``, never ``match`` with
``$``, which lets a final newline through and so makes look-alike ids.
"""

from __future__ import annotations

import re

_FAULT = re.compile(r"[\x00-\x1f\x7f-\x9f\ud800-\udfff]")
# The same, but a line feed passes: for the few fields that are documents of lines.
_FAULT_BUT_NEWLINE = re.compile(r"[\x00-\x09\x0b-\x1f\x7f-\x9f\ud800-\udfff]")

IDENTIFIER = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:@-]{0,63}")
IDENTIFIER_RULE = ("1-64 characters: letters, digits and . _ : @ -, starting with a letter "
                   "or digit")


def text_fault(value: str, *, newlines: bool = False) -> tuple[str, str] | None:
    """Return ``(code, message)`` saying why ``value`` is refused, or None when it is fine.

    ``newlines`` lets line feeds through (a signed note's lines), and nothing else.
    """
    # An ASCII string is faultless exactly when it is printable (no C0 control, no DEL):
    # two C calls that read each character once, where the pattern's class tests each
    # against its ranges (a settle's strings, about 0.09 M instructions). Anything else,
    # or a line feed let through, is the pattern's.
    if value.isascii() and value.isprintable():
        return None
    found = (_FAULT_BUT_NEWLINE if newlines else _FAULT).search(value)
    if found is None:
        return None
    char, at = found.group(), found.start()
    if "\ud800" <= char <= "\udfff":
        return ("invalid_unicode",
                f"holds a lone surrogate U+{ord(char):04X} at position {at}: not valid Unicode")
    return ("control_character",
            f"holds the control character U+{ord(char):04X} at position {at}")


def any_text_fault(texts: list[str]) -> bool:
    """Say whether any of ``texts`` holds what ``text_fault`` refuses: one search over them
    all, joined by a space (which no rule refuses); only then is each worth naming."""
    return text_fault(" ".join(texts)) is not None


def is_identifier(value: str) -> bool:
    """Say whether ``value`` is an identifier (player, table, operator id) as a whole."""
    return IDENTIFIER.fullmatch(value) is not None

