"""app.text's one rule for strings, against the rule as the spec states it, character by
character: no C0 or C1 control, no DEL, no lone surrogate (a line feed only where allowed)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from app.text import text_fault


def _refused(char: str, newlines: bool) -> str | None:
    code = ord(char)
    if 0xD800 <= code <= 0xDFFF:
        return "invalid_unicode"
    if code <= 0x1F or 0x7F <= code <= 0x9F:
        return None if newlines and char == "\n" else "control_character"
    return None


def _expected(value: str, newlines: bool) -> tuple[str, str] | None:
    for at, char in enumerate(value):
        code = _refused(char, newlines)
        if code is not None:
            what = ("holds a lone surrogate" if code == "invalid_unicode"
                    else "holds the control character")
            tail = ": not valid Unicode" if code == "invalid_unicode" else ""
            return code, f"{what} U+{ord(char):04X} at position {at}{tail}"
    return None


def test_every_character_alone_is_judged_by_the_rule() -> None:
    for code in range(0x110000):
        char = chr(code)
        for newlines in (False, True):
            assert text_fault(char, newlines=newlines) == _expected(char, newlines), hex(code)


def test_printable_ascii_passes_and_each_ascii_control_is_named_where_it_is() -> None:
    clean = "".join(chr(c) for c in range(0x20, 0x7F))
    assert text_fault(clean) is None
    for code in [*range(0x20), 0x7F]:
        value = f"{clean}{chr(code)}{clean}"
        assert text_fault(value) == _expected(value, False)


@given(st.text(st.characters(min_codepoint=0, max_codepoint=0x2FF) | st.sampled_from(
    ["\ud800", "\udfff", "\n", "½", "梅"])), st.booleans())
def test_any_string_is_judged_by_the_rule(value: str, newlines: bool) -> None:
    assert text_fault(value, newlines=newlines) == _expected(value, newlines)
