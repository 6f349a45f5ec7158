"""Update the verification matrix's data without running all of it (``hooke verify --all --out
docs/data`` runs every cell, about 45 min): run the cells of the scenes named — a scene added
or changed — put them into docs/data/verification.csv in place of those scenes' rows (in the
matrix's order), then redraw docs/images/verification.png from the whole file. With no scene
named, only the picture is redrawn (data merged from runs made apart).

    .venv/bin/python scripts/update_verification.py cloth_fold soft3d_pile
    .venv/bin/python scripts/readme_tables.py      # then the README's blocks
"""

import sys
from pathlib import Path

from hooke.verification import FULL, run_matrix
from hooke.verification.report import (PLOT_TITLE, matrix_plot, read_matrix_csv,
                                       write_matrix_csv)

ROOT = Path(__file__).resolve().parents[1]
CSV = ROOT / "docs" / "data" / "verification.csv"


def main(scenes: list[str]) -> None:
    cells = [cell for cell in read_matrix_csv(CSV) if cell.scene not in scenes]
    if scenes:
        unknown = set(scenes) - {case.scene for case in FULL.cases}
        if unknown:
            raise SystemExit(f"not in the matrix's plan: {', '.join(sorted(unknown))}")
        cells += run_matrix(FULL, scenes=scenes, on_cell=lambda cell: print(
            f"{cell.scene} × {cell.integrator}: {cell.status} (order {cell.measured_order:.2f}; "
            f"{cell.wall_time:.1f} s)", flush=True))
        order = [case.scene for case in FULL.cases]
        write_matrix_csv(sorted(cells, key=lambda cell: order.index(cell.scene)), CSV)
    matrix_plot(cells, ROOT / "docs" / "images" / "verification.png",
                PLOT_TITLE.format(command="hooke verify --all"))
    print(f"{len(cells)} cells drawn")


if __name__ == "__main__":
    main(sys.argv[1:])
