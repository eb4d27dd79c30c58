"""The results reference page is generated from the declarations, and every declared field has a doc."""

from __future__ import annotations

from pathlib import Path

from tebench.store import reference

PAGE = Path(__file__).resolve().parents[3] / "docs" / "guide" / "results-reference.md"


def test_every_declared_field_has_a_doc():
    assert reference.undocumented() == []


def test_the_reference_page_is_what_the_declarations_say():
    assert PAGE.read_text() == reference.markdown() + "\n", (
        "docs/guide/results-reference.md is stale: python -m tebench.store.reference > "
        "docs/guide/results-reference.md")


def test_the_page_covers_every_part_a_record_can_hold():
    text = PAGE.read_text()
    for part in ("RunHeader", "CaseResult", "Parity", "Energy", "Validation", "Summary", "Environment", "Case"):
        assert f"## {part}" in text or f": {part}" in text, part
