#!/usr/bin/env bash
# The suite against a non-editable wheel install (issue 33): `make test-wheel`.
#
# Builds the wheel from the working tree, installs it (no dependencies) into a scratch
# virtualenv that borrows the dev virtualenv's third-party packages, and runs pytest from a
# copy of the tree without the package's Python files, so every `turngraph.*` import
# resolves to the installed wheel. Tests that read the source tree itself (layering, guard
# scans, packaging) carry the `source_tree` marker and run in `make test` only.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
venv=${VENV:-.venv}
work=$root/build/wheel-test
rm -rf "$work"; mkdir -p "$work/tree" "$work/dist"

echo "==> [1/3] the wheel, built offline from the working tree"
"$venv/bin/python" -m pip wheel --quiet --no-deps --no-build-isolation -w "$work/dist" . >"$work/build.log" 2>&1 || { cat "$work/build.log"; exit 1; }

echo "==> [2/3] a scratch virtualenv: the wheel, plus $venv's third-party packages"
python3 -m venv --without-pip "$work/venv"
site=$("$work/venv/bin/python" -c 'import sysconfig; print(sysconfig.get_path("purelib"))')
dev_site=$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_path("purelib"))')
echo "$dev_site" > "$site/dev-packages.pth"
"$venv/bin/python" -m pip --python "$work/venv/bin/python" install --quiet --no-deps "$work"/dist/*.whl
# The dev virtualenv's console scripts (pytest, valkey-server...) next to the wheel's own.
for tool in "$venv"/bin/*; do
  name=$(basename "$tool")
  [ -e "$work/venv/bin/$name" ] || ln -s "$root/$tool" "$work/venv/bin/$name"
done

echo "==> [3/3] the suite from a copy of the tree without the package's Python files"
git ls-files -z | (cd "$root" && xargs -0 cp --parents -t "$work/tree" 2>/dev/null || true)
(cd "$work/tree" && find turngraph schemas producers workers -name "*.py" -delete)
for d in tests/clients/node_modules producers/typescript/node_modules ops/cypher-lint/node_modules; do
  [ -d "$d" ] && mkdir -p "$work/tree/$(dirname "$d")" && ln -s "$root/$d" "$work/tree/$d"
done
cd "$work/tree"
exec "$work/venv/bin/python" -m pytest -q -p no:cacheprovider -m "not source_tree" "$@"
