"""The README's measured tables are generated (scripts/readme_tables.py) from docs/data: none is
typed by hand, and each names the command that produced its data."""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import load_script

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "readme_tables.py"


@pytest.fixture(scope="module")
def tables():
    return load_script(SCRIPT)


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


# -- the figures' blocks: the study and the benchmarks ---------------------------------------------

def test_a_block_without_its_data_names_the_command_that_writes_it(tables, tmp_path):
    for name in ("pendulum-correction", "speed", "speed-w5", "joints", "contact", "frames",
                 "seed-003-frames", "startup", "gradient"):
        renderer = tables.RENDERERS[name]
        assert renderer(tmp_path) == f"Not measured yet: run `{renderer.command}`.\n"


def test_the_study_tables_take_every_curve_once(tables):
    """From the committed study data: the β_c sweep (k_c = 0, with β_c = 0.2 of both sweeps),
    the k_c sweep at β_c = 0.2 (k_c > 0) and the three other stabilisations."""
    run = tables.read_measurement(tables.DATA / "pendulum_correction.json")
    assert run["command"].startswith("hooke study pendulum-correction") and run["t_end"] == 100
    measured = tables.study_tables(run["rows"])
    assert list(measured["beta_c"]) == [0.0, 0.1, 0.2, 0.3, 0.4]
    assert list(measured["k_c"]) == [0.01, 0.02, 0.03, 0.04]
    assert list(measured["other"]) == ["Baumgarte (α=β=10/s)", "projection", "generalized-α ρ∞=0.8"]
    assert list(tables.SEED_003_BETA_C) == list(measured["beta_c"])
    assert list(tables.SEED_003_K_C) == list(measured["k_c"])


@pytest.mark.parametrize("value, text", [
    (13.87, "13.9"), (0.0975, "9.8e-2"), (0.14, "0.14"), (4840.4, "4,840"), (1.98e8, "1.98e8"),
    (7.29e-11, "7.3e-11"), (0.0, "0"), (None, "–")])
def test_significant_digits_of_a_table_cell(tables, value, text):
    assert tables.significant(value) == text


def gradient_case(ratio: float, warp: dict | None) -> dict:
    """A ``hooke bench gradient`` row as the workload writes it (times in seconds)."""
    names = ["forward run", "hooke.gradient", "hooke.gradient, 20 checkpoints",
             "central differences (4 runs)", "Warp forward run", "Warp tape gradient"]
    seconds = [0.5, 0.5 * ratio, 0.5 * (ratio + 1), 2.0, 0.25, 1.5]
    over = [1.0, ratio, ratio + 1, 4.0, None, None]
    rows = [{"name": name, "seconds": t, "rounds": [t], "over_forward": o}
            for name, t, o in zip(names, seconds, over)]
    case = {"case": "cloth2d symplectic_euler", "scene": "cloth2d",
            "integrator": "symplectic_euler", "dt": 0.0025, "steps": 400,
            "params": ["stiffness", "damping"], "particles": 1200, "springs": 4592,
            "sqrt_checkpoints": 20, "gradient_over_forward": ratio, "rows": rows}
    if warp is not None:
        case["warp"] = warp
    return case


def test_the_gradient_block_quotes_ratios_and_the_goal_from_its_data(tables, tmp_path):
    """The gradient block: every time with its ratio to the forward run, the goal met at ≤ 3×
    only, and Warp's ratio only where its gradient agreed with hooke's."""
    import json

    measured = {"date": "2026-11-26T12:00:00", "commit": "abc1234", "cpu": "AMD EPYC",
                "cores": 2, "numba_threads": 2, "blas_kernel": "SkylakeX",
                "others_cpu_share": 0.01}
    agreeing = {"status": "installed", "version": "1.19.0", "gradient": {}, "agrees": True,
                "gradient_relative_difference": 1e-14, "warp_gradient_over_forward": 6.0,
                "hooke_over_warp": 1.5}
    differing = dict(agreeing, agrees=False, gradient_relative_difference=0.1,
                     hooke_over_warp=None)
    bench = {"command": tables.GRADIENT_COMMAND, "measured": measured, "smoke": False,
             "rounds": 5, "rows": [gradient_case(2.5, agreeing), gradient_case(3.2, differing),
                                   gradient_case(2.0, None)]}
    (tmp_path / "bench_gradient.json").write_text(json.dumps(bench))
    text = tables.RENDERERS["gradient"](tmp_path)
    lines = [line for line in text.splitlines() if line.startswith("| `cloth2d`")]
    assert len(lines) == 3 and "SMOKE" not in text
    assert "| 500 (×1) | 1,250 (×2.5) | 1,750 (×3.5) | 2,000 (×4) |" in lines[0]
    assert "hooke ×1.5 faster" in lines[0] and lines[0].endswith("≤ 3×: met |")
    assert "no ratio" in lines[1] and "faster" not in lines[1]
    assert lines[1].endswith("≤ 3×: **not met** |")
    assert lines[2].endswith("|  | ≤ 3×: met |")
    slower = dict(bench, rows=[gradient_case(2.5, dict(agreeing, hooke_over_warp=0.8))])
    (tmp_path / "bench_gradient.json").write_text(json.dumps(slower))
    assert "Warp ×1.25 faster" in tables.RENDERERS["gradient"](tmp_path)
