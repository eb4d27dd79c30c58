#!/usr/bin/env bash
# Re-render every shipped report in reports/ from the results stored in this
# repository (no GPU, no re-run), then screenshot the top of each HTML page
# when a Chromium is installed. One command after a change to the report
# layout or to the verdict rules (the stored records name no parity rules, or
# older ones after a change of parity.PARITY_RULES, so parity is judged again
# from the stored curves):
#
#   bash scripts/render-reports.sh              # into reports/<run>/
#   bash scripts/render-reports.sh --out DIR    # into DIR/<run>/, leaving reports/ as it is
#
# In reports/ only report.md (and the showcase runs' index.html) are tracked;
# the chart PNGs, cases.csv, screenshots and the other runs' index.html that a
# render writes there are ignored by git (.gitignore), so they can be looked at
# and are not committed again. reports/README.md lists what is kept and why.
#
# TEBENCH overrides the tebench command (default .venv/bin/tebench).
set -euo pipefail
DEST=reports
if [ "${1:-}" = "--out" ]; then
  [ -n "${2:-}" ] || { echo "render-reports.sh: --out needs a directory" >&2; exit 2; }
  DEST=$(realpath -m "$2")  # resolved before the cd below: relative to where it was called from
elif [ -n "${1:-}" ]; then
  echo "usage: bash scripts/render-reports.sh [--out DIR]" >&2; exit 2
fi
cd "$(dirname "$0")/.."
TEBENCH=${TEBENCH:-.venv/bin/tebench}
CHROMIUM=$(command -v chromium || command -v chromium-browser || command -v google-chrome || true)

render() {  # render NAME RESULTS...: into DEST/NAME; old charts go (their count can change)
  local dir=$DEST/$1
  shift
  mkdir -p "$dir"
  rm -f "$dir"/*.png
  "$TEBENCH" report "$@" --out "$dir"
  if [ -n "$CHROMIUM" ]; then
    # The first screen a reader sees: the answer should be on it.
    "$CHROMIUM" --headless --no-sandbox --disable-gpu --hide-scrollbars --window-size=1400,1800 \
      --screenshot="$(realpath "$dir")/screenshot.png" "file://$(realpath "$dir")/index.html" >/dev/null 2>&1
  fi
}

render h200-nightly          reports/h200-nightly/results.jsonl.gz
render h200-crossover        reports/h200-crossover/results.jsonl.gz
render h200-tutorial-distill reports/h200-tutorial-distill/results.jsonl.gz
render h200-llama           reports/h200-llama/results.jsonl.gz
render h200-d4096-lr-warmup  reports/h200-d4096-lr-warmup/warmup-0-8-16.jsonl.gz \
                             reports/h200-d4096-lr-warmup/warmup-16-calibration.jsonl.gz
render h200x2-distributed    tests/fixtures/h200x2-distributed.jsonl
render h200-modules          tests/fixtures/h200-modules-benchmark.json
render cpu-smoke             reports/cpu-smoke/results.jsonl
render h200-harness-cost     reports/h200-harness-cost/nightly-depth4.jsonl.gz
render h200-breakdown        reports/h200-breakdown/kernels.jsonl.gz reports/h200-breakdown/d4096.jsonl.gz \
                             reports/h200-breakdown/bypass.jsonl.gz reports/h200-breakdown/graphs.jsonl.gz
render h200-torchao          reports/h200-torchao/d4096.jsonl.gz reports/h200-torchao/nightly-d2048.jsonl.gz \
                             reports/h200-torchao/crossover-s2048.jsonl.gz
render h200-torchao-mutations reports/h200-torchao-mutations/results.jsonl.gz
render h200-torchao-nightly  reports/h200-torchao-nightly/results.jsonl.gz
# h200-nightly-trimmed: its results went to git history (its README says where); report.md stays as rendered.
render h200-nightly-warm     reports/h200-nightly-warm/results.jsonl.gz
render h200-nightly-zipf     reports/h200-nightly-zipf/results.jsonl.gz
render h200-verdict-mutations reports/h200-verdict-mutations/results.jsonl.gz
render h200-nightly-energy   reports/h200-nightly-energy/results.jsonl
render h200-verdict-power      reports/h200-verdict-power/nightly.jsonl.gz reports/h200-verdict-power/tutorial.jsonl.gz
render h100-llama-twice      reports/h100-llama-twice/l1.jsonl.gz reports/h100-llama-twice/l2.jsonl.gz
render h200-nightly-twice     reports/h200-nightly-twice/night1.jsonl.gz reports/h200-nightly-twice/night2.jsonl.gz
render h200-one-case-type     reports/h200-one-case-type/results.jsonl.gz
render h100-nightly-87e902b   reports/h100-nightly-87e902b/night1.jsonl.gz reports/h100-nightly-87e902b/night2.jsonl.gz
