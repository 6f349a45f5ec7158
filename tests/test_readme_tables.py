"""The README's measured tables are generated (scripts/readme_tables.py) from docs/data: none is
typed by hand, and each names the command that produced its data."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "readme_tables.py"


@pytest.fixture(scope="module")
def tables():
    spec = importlib.util.spec_from_file_location("readme_tables", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_every_generated_block_matches_its_data(tables):
    text = tables.README.read_text(encoding="utf-8")
    assert tables.render(text) == text, "run: python scripts/readme_tables.py"


def test_a_hand_edit_inside_a_block_is_found(tables):
    text = tables.README.read_text(encoding="utf-8")
    blocks = list(tables.BLOCK.finditer(text))
    if not blocks:
        pytest.skip("no generated block yet")
    first = blocks[0]
    edited = text[:first.start("body")] + "| 1.0 |\n" + text[first.start("body"):]
    assert tables.render(edited) == text


def test_a_block_without_renderer_is_an_error(tables):
    with pytest.raises(ValueError, match="'nosuch' has no renderer"):
        tables.render("<!-- begin nosuch -->\nx\n<!-- end nosuch -->\n" + tables.README.read_text())


def test_a_renderer_must_name_its_command(tables, tmp_path):
    renderer = tables.Renderer("demo", "hooke demo", lambda data: "| 1 |\n")
    with pytest.raises(ValueError, match="does not name its command"):
        renderer(tmp_path)
    assert tables.Renderer("demo", "hooke demo", lambda data: "From `hooke demo`.\n")(tmp_path)
