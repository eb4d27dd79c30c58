#!/usr/bin/env bash
# Here, before the device call: the package before the change, in .old/tebench (ignored; carried with .gpu).
# The tracked files and .gpu come to about 63 MiB of the 64 a call carries, so .whl (torchao) stays here.
set -eu
BEFORE=${1:-d901b60}
rm -rf .old && mkdir .old
git archive "$BEFORE" tebench | tar -x -C .old
grep -qx '/.old/' .git/info/exclude || echo /.old/ >> .git/info/exclude
