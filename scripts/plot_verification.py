"""Redraw docs/images/verification.png from docs/data/verification.csv (the cells
``hooke verify --all --out docs/data`` measured), without running the matrix again: for data
merged from runs made apart (scenes added on different branches), whose picture must still show
every cell of the file.

    .venv/bin/python scripts/plot_verification.py
"""

from pathlib import Path

from hooke.verification.report import PLOT_TITLE, matrix_plot, read_matrix_csv

ROOT = Path(__file__).resolve().parents[1]

if __name__ == "__main__":
    cells = read_matrix_csv(ROOT / "docs" / "data" / "verification.csv")
    matrix_plot(cells, ROOT / "docs" / "images" / "verification.png",
                PLOT_TITLE.format(command="hooke verify --all"))
    print(f"{len(cells)} cells drawn")
