# Sourced by the scripts here: Transformer Engine from .gpu/, torchao 0.18.0 from its wheel in .whl/,
# both byte-compiled as a pip install would leave them (a nightly's workers import them dozens of times).
source .gpu/install.sh > /tmp/install.log 2>&1 || { cat /tmp/install.log; exit 1; }
if [ ! -d /tmp/ao/torchao ]; then
  python3 -m pip install -q --no-index --no-deps --target /tmp/ao .whl/torchao-*.whl > /dev/null 2>&1
  python3 -m compileall -q /tmp/te-site > /dev/null 2>&1
fi
export PYTHONPATH="$PWD:/tmp/ao:$PYTHONPATH" PYTHONUNBUFFERED=1
CCDIR=$HOME/.cache/tebench/ao-nightly-cc; mkdir -p /tmp/ao-nightly
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
