"""A fresh request id is a version-4 UUID in hex, as ``uuid.uuid4().hex`` writes it."""

from __future__ import annotations

import uuid

from hypothesis import given
from hypothesis import strategies as st

from app.api import requestlog


@given(raw=st.binary(min_size=16, max_size=16))
def test_an_id_is_what_uuid4_makes_of_the_same_random_bytes(raw):
    assert requestlog.uuid4_hex(raw) == uuid.UUID(bytes=raw, version=4).hex


def test_fresh_ids_are_version_4_uuids_in_hex_and_differ():
    ids = {requestlog._new_id() for _ in range(100)}
    assert len(ids) == 100
    for given_id in ids:
        parsed = uuid.UUID(hex=given_id)
        assert parsed.version == 4 and parsed.variant == uuid.RFC_4122
        assert parsed.hex == given_id
