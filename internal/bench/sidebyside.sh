#!/usr/bin/env bash
# sidebyside.sh: replicate the same data from the source to the target real
# Kafka cluster with Apache MirrorMaker 2, kmirror (examples/kmirror) and
# a bare franz-go pipe, alternating, and write internal/bench/results/latest.md,
# latest.csv and latest.png. See internal/bench/README.md.
#
#   internal/realkafka/kafka.sh start      # if the two clusters are not running
#   internal/bench/sidebyside.sh                                   # 1M x 1 KiB, 5M x 100 B, 2M JSON orders lz4 and zstd, 3 reps
#   internal/bench/sidebyside.sh -records 100k -size 1024 -reps 1  # a quick one
#   internal/bench/sidebyside.sh -workloads 1Mx1024,5Mx100 -partitions 8 -reps 3 -systems mm2,kmirror,bare
#
# Every flag is passed to internal/bench/cmd/sidebyside (-h lists them).
# SIDEBYSIDE_OUT overrides the results dir. The chart needs python3 with
# matplotlib (pip install matplotlib); without it the chart step is skipped.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$ROOT"
KAFKA_SH=internal/realkafka/kafka.sh
OUT="${SIDEBYSIDE_OUT:-internal/bench/results}"

if ! "$KAFKA_SH" status >/dev/null; then
  echo "sidebyside.sh: the source and target clusters are not running: $KAFKA_SH start" >&2
  exit 1
fi
BIN="$(mktemp -d "${TMPDIR:-/tmp}/sidebyside-bin.XXXXXX")"
trap 'rm -rf "$BIN"' EXIT
go build -o "$BIN/" ./examples/kmirror ./internal/bench/cmd/barepipe ./internal/bench/cmd/sidebyside
eval "$("$KAFKA_SH" env)"

# The command line for the report, quoted where an argument holds spaces.
cmdline="internal/bench/sidebyside.sh"
for a in "$@"; do
  if [[ "$a" == *[[:space:]]* ]]; then cmdline+=" '$a'"; else cmdline+=" $a"; fi
done

"$BIN/sidebyside" -classpath "$("$KAFKA_SH" classpath)" -mirrormaker "$BIN/kmirror" -barepipe "$BIN/barepipe" \
  -kafka-version "${KAFKA_VERSION:-4.3.1}" -revision "$(git describe --always --dirty 2>/dev/null || echo unknown)" -out "$OUT" -command "$cmdline" "$@"

if python3 -c 'import matplotlib' 2>/dev/null; then
  python3 internal/bench/chart.py "$OUT/latest.csv" "$OUT/latest.png"
else
  echo "sidebyside.sh: no matplotlib for python3 (pip install matplotlib): chart skipped" >&2
fi
