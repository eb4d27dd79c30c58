#!/usr/bin/env bash
# Re-render every shipped report in reports/ from the results stored in this
# repository (no GPU, no re-run), then screenshot the top of each HTML page
# when a Chromium is installed. One command after a change to the report
# layout or to the verdict rules (parity is always re-judged from the stored
# curves):
#
#   bash scripts/render-reports.sh
#
# TEBENCH overrides the tebench command (default .venv/bin/tebench).
set -euo pipefail
cd "$(dirname "$0")/.."
TEBENCH=${TEBENCH:-.venv/bin/tebench}
CHROMIUM=$(command -v chromium || command -v chromium-browser || command -v google-chrome || true)

render() {  # render DIR RESULTS...: DIR under reports/; old charts go (their count can change)
  local dir=reports/$1
  shift
  mkdir -p "$dir"
  rm -f "$dir"/*.png
  "$TEBENCH" report "$@" --out "$dir"
  if [ -n "$CHROMIUM" ]; then
    # The first screen a reader sees: the answer should be on it.
    "$CHROMIUM" --headless --no-sandbox --disable-gpu --hide-scrollbars --window-size=1400,1800 \
      --screenshot="$PWD/$dir/screenshot.png" "file://$PWD/$dir/index.html" >/dev/null 2>&1
  fi
}

render h200-nightly          reports/h200-nightly/results.jsonl
render h200-crossover        reports/h200-crossover/results.jsonl
render h200-tutorial-distill reports/h200-tutorial-distill/results.jsonl
render h200-llama           reports/h200-llama/results.jsonl
render h200-d4096-lr-warmup  reports/h200-d4096-lr-warmup/warmup-0-8-16.jsonl \
                             reports/h200-d4096-lr-warmup/warmup-16-calibration.jsonl
render h200x2-distributed    tests/fixtures/h200x2-distributed.jsonl
render h200-modules          tests/fixtures/h200-modules-benchmark.json
render cpu-smoke             tests/fixtures/cpu-smoke.jsonl
render h200-harness-cost     reports/h200-harness-cost/nightly-depth4.jsonl
