"""Regenerate interfpred/data/datasets/orion/ from Orion's original per-operator CSVs.

Orion (Strati et al., EuroSys 2024; https://github.com/eth-easl/orion, MIT licence) ships one CSV
per inference pass (``<model>_<batch>_fwd.csv``: Name, Profile, Memory_footprint, SM_usage,
Duration).  This script converts each into the package's layout (op, name, kind, sm_usage,
duration_ns; the always-zero footprint column is dropped), checks that the conversion round-trips
to the original rows, and copies the licence.

Run: ``python scripts/convert_orion.py SOURCE_FOLDER [--out interfpred/data/datasets/orion]``
"""

from __future__ import annotations

import argparse
import shutil
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from interfpred.sim.orion import (  # noqa: E402
    ORION_MODELS,
    read_operator_table,
    read_orion_csv,
    to_orion_csv,
    write_operator_table,
)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("source", help="folder with Orion's <model>_<batch>_fwd.csv files and its LICENSE")
    ap.add_argument("--out", default=str(Path(__file__).resolve().parents[1] / "interfpred" / "data" / "orion"))
    args = ap.parse_args()
    src, out = Path(args.source), Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    for model, (fname, b0) in ORION_MODELS.items():
        original = src / f"{model}_{b0}_fwd.csv"
        table = read_orion_csv(original)
        text = original.read_text(encoding="utf-8").replace("\r\n", "\n")
        if to_orion_csv(table) != text:
            print(f"{original}: conversion does not round-trip (a footprint is not 0?)", file=sys.stderr)
            return 1
        write_operator_table(table, out / fname)
        assert read_operator_table(out / fname) == table
        print(f"{original.name} -> {out / fname} ({len(table)} operators)")
    shutil.copyfile(src / "LICENSE", out / "LICENSE")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
