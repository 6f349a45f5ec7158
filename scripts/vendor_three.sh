#!/bin/sh
# Rebuild the browser viewer's vendored three.js (src/hooke/viz/web/static/vendor/three.module.min.js)
# from the npm packages pinned in web/package.json and web/package-lock.json (three, esbuild):
# `npm ci` installs exactly the locked versions, then esbuild bundles web/three-entry.js (the
# names the viewer uses, OrbitControls included) into one minified ES module. Nothing is fetched
# at run time: the page imports this file from the package's static files.
# Usage: sh scripts/vendor_three.sh   (or `make vendor-three`)
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
out="$root/src/hooke/viz/web/static/vendor"
cd "$root/web"
npm ci --no-audit --no-fund
version=$(node -p 'require("./node_modules/three/package.json").version')
mkdir -p "$out"
./node_modules/.bin/esbuild three-entry.js --bundle --format=esm --minify --target=es2020 \
  --legal-comments=inline --banner:js="// three.js r$(echo "$version" | cut -d. -f2) (npm three@$version, MIT: see three.LICENSE), bundled by scripts/vendor_three.sh" \
  --outfile="$out/three.module.min.js"
cp node_modules/three/LICENSE "$out/three.LICENSE"
echo "three@$version -> $out/three.module.min.js ($(wc -c < "$out/three.module.min.js") bytes)"
