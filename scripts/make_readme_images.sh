#!/usr/bin/env bash
# Regenerate the pictures in docs/images with hooke itself (run from the repository root);
# convergence.png and verification.png come with their data from make_verification_data.sh.
set -euo pipefail
out=$(mktemp -d)
img=docs/images
mkdir -p "$img"
.venv/bin/hooke run spring1d --integrator symplectic_euler --t-end 6 --out "$out/spring1d" >/dev/null
.venv/bin/hooke run cloth2d --dt 0.0025 --t-end 2 --out "$out/cloth2d" >/dev/null
.venv/bin/hooke run square_drop --out "$out/square" >/dev/null
.venv/bin/hooke run top --t-end 2 --out "$out/top" >/dev/null
.venv/bin/hooke run squares_self_contact --out "$out/squares" >/dev/null
.venv/bin/hooke run chain_pile --out "$out/chain" >/dev/null
.venv/bin/hooke run cloth_sphere --t-end 1.2 --save-every 10 --out "$out/cloth_sphere" >/dev/null
.venv/bin/hooke run cloth_fold --out "$out/cloth_fold" >/dev/null
.venv/bin/hooke run soft3d_pile --out "$out/soft3d_pile" >/dev/null
.venv/bin/hooke modes crane -k 5 --out "$out/crane" >/dev/null
.venv/bin/hooke animate "$out/cloth2d" --out "$img/cloth2d.gif" --fps 12 >/dev/null
cp "$out/spring1d/analytic.png" "$img/spring1d_analytic.png"
cp "$out/cloth2d/snapshot.png" "$img/cloth2d_snapshot.png"
cp "$out/square/snapshot.png" "$img/square_drop_snapshot.png"
cp "$out/top/snapshot.png" "$img/top_snapshot.png"
cp "$out/squares/snapshot.png" "$img/squares_self_contact_snapshot.png"
cp "$out/chain/snapshot.png" "$img/chain_pile_snapshot.png"
cp "$out/cloth_sphere/snapshot.png" "$img/cloth_sphere_snapshot.png"
cp "$out/cloth_fold/snapshot.png" "$img/cloth_fold_snapshot.png"
cp "$out/soft3d_pile/snapshot.png" "$img/soft3d_pile_snapshot.png"
cp "$out/crane/modes.png" "$img/crane_modes.png"
rm -rf "$out"
ls -la "$img"
