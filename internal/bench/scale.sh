#!/usr/bin/env bash
# scale.sh: kmirror (and, with -systems kmirror,mm2, Apache MirrorMaker 2)
# on many partitions and consumer groups against the two clusters of
# internal/realkafka/kafka.sh, and write internal/bench/results/scale-latest.md
# and scale-latest.csv. See internal/bench/README.md, section "Scale".
#
#   internal/realkafka/kafka.sh start      # if the two clusters are not running
#   internal/bench/scale.sh                                            # 2 000/500 and 6 000/2 000, kmirror
#   internal/bench/scale.sh -shapes 2000x10x20:5000x4 -systems kmirror  # 20 000 partitions, 5 000 groups
#   internal/bench/scale.sh -systems kmirror,mm2 -mm2-cap 15m           # MM2 side by side
#   KMIRROR_KAFKA_BROKERS=2 internal/realkafka/kafka.sh start          # two brokers per cluster:
#   KMIRROR_KAFKA_BROKERS=2 internal/bench/scale.sh -shapes 2000x10x20:5000x4 -systems kmirror -kmirror-cap 20m
#
# Every flag is passed to internal/bench/cmd/scale (-h lists them). The
# kafka.sh variables (KMIRROR_SOURCE_PORT, KMIRROR_KAFKA_STATE, ...) select
# the clusters (set KMIRROR_KAFKA_BROKERS=2 here too when the clusters were
# started with it: env then lists both brokers). SCALE_OUT overrides the results dir.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$ROOT"
KAFKA_SH=internal/realkafka/kafka.sh
OUT="${SCALE_OUT:-internal/bench/results}"

if ! "$KAFKA_SH" status >/dev/null; then
  echo "scale.sh: the source and target clusters are not running: $KAFKA_SH start" >&2
  exit 1
fi
echo "scale.sh: ulimit -n $(ulimit -n), vm.max_map_count $(cat /proc/sys/vm/max_map_count) per broker process (a broker needs about one open file and two memory maps per partition; the brokers inherit the limits of the shell that started them; KMIRROR_KAFKA_BROKERS=2 kafka.sh start gives each cluster two brokers)" >&2
BIN="$(mktemp -d "${TMPDIR:-/tmp}/scale-bin.XXXXXX")"
trap 'rm -rf "$BIN"' EXIT
go build -o "$BIN/" ./examples/kmirror ./internal/bench/cmd/scale
eval "$("$KAFKA_SH" env)"

cmdline="internal/bench/scale.sh"
for a in "$@"; do
  if [[ "$a" == *[[:space:]]* ]]; then cmdline+=" '$a'"; else cmdline+=" $a"; fi
done

"$BIN/scale" -classpath "$("$KAFKA_SH" classpath)" -mirrormaker "$BIN/kmirror" \
  -kafka-version "${KAFKA_VERSION:-4.3.1}" -revision "$(git describe --always --dirty 2>/dev/null || echo unknown)" \
  -out "$OUT" -command "$cmdline" "$@"
