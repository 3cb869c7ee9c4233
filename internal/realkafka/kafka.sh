#!/usr/bin/env bash
# kafka.sh runs two real Apache Kafka 4.x clusters ("source" and "target") and,
# on demand, Apache MirrorMaker 2 in dedicated mode, for kmirror's tests.
# Everything binds to 127.0.0.1. See README.md beside this file.
#
# Opt-in KMIRROR_KAFKA_BROKERS=2: each cluster gets a second, broker-only
# node (see BROKERS below).
#
# Usage: kafka.sh install | start | stop | status | env | classpath
#        kafka.sh start source|target | kill source|target [TERM|KILL] | restart source|target [TERM|KILL]
#        kafka.sh mm2 start PROPERTIES [MirrorMaker args...] | mm2 stop | mm2 status
#        kafka.sh tool CLASS [args...]     (a Kafka CLI class, e.g. org.apache.kafka.tools.TopicCommand)
set -euo pipefail

KAFKA_VERSION="${KAFKA_VERSION:-4.3.1}"
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
KHOME="${KMIRROR_KAFKA_HOME:-${HOME:?HOME is not set}/.cache/kmirror/kafka-${KAFKA_VERSION}}"
LIB="$KHOME/lib"
STATE="${KMIRROR_KAFKA_STATE:-${TMPDIR:-/tmp}/kmirror-kafka}"

# Default ports lie below Linux's ephemeral range (32768-60999), so a client
# socket of a test that just ran cannot hold one of them when a broker binds.
SOURCE_PORT="${KMIRROR_SOURCE_PORT:-19092}"
SOURCE_CONTROLLER_PORT="${KMIRROR_SOURCE_CONTROLLER_PORT:-19093}"
TARGET_PORT="${KMIRROR_TARGET_PORT:-19192}"
TARGET_CONTROLLER_PORT="${KMIRROR_TARGET_CONTROLLER_PORT:-19193}"
# Each broker has a second listener, PROXIED, bound at PROXIED_PORT and
# advertised at PROXY_PORT, where a fault proxy (internal/faultproxy) forwards
# to PROXIED_PORT: clients that bootstrap at PROXY_PORT are told PROXY_PORT
# as the broker's address and so stay behind the proxy.
SOURCE_PROXIED_PORT="${KMIRROR_SOURCE_PROXIED_PORT:-$((SOURCE_PORT + 2))}"
SOURCE_PROXY_PORT="${KMIRROR_SOURCE_PROXY_PORT:-$((SOURCE_PORT + 3))}"
TARGET_PROXIED_PORT="${KMIRROR_TARGET_PROXIED_PORT:-$((TARGET_PORT + 2))}"
TARGET_PROXY_PORT="${KMIRROR_TARGET_PROXY_PORT:-$((TARGET_PORT + 3))}"
# Opt-in (KMIRROR_KAFKA_SASL=1, implies KMIRROR_KAFKA_AUTHORIZER=1): a third
# listener, SASL (SASL_PLAINTEXT, mechanism PLAIN), where the authorizer is
# enforced: its users are an admin super user for the tests and one kmirror
# user per cluster that has only the ACLs a test grants. The PLAINTEXT,
# CONTROLLER and PROXIED listeners stay ANONYMOUS super users, as without it.
SASL="${KMIRROR_KAFKA_SASL:-0}"
SOURCE_SASL_PORT="${KMIRROR_SOURCE_SASL_PORT:-$((SOURCE_PORT + 4))}"
TARGET_SASL_PORT="${KMIRROR_TARGET_SASL_PORT:-$((TARGET_PORT + 4))}"
SASL_ADMIN_USER="${KMIRROR_SASL_ADMIN_USER:-admin}"
SASL_ADMIN_PASSWORD="${KMIRROR_SASL_ADMIN_PASSWORD:-admin-secret}"
SOURCE_SASL_USER="${KMIRROR_SOURCE_SASL_USER:-kmirror-source}"
SOURCE_SASL_PASSWORD="${KMIRROR_SOURCE_SASL_PASSWORD:-kmirror-source-secret}"
TARGET_SASL_USER="${KMIRROR_TARGET_SASL_USER:-kmirror-target}"
TARGET_SASL_PASSWORD="${KMIRROR_TARGET_SASL_PASSWORD:-kmirror-target-secret}"

# Opt-in (KMIRROR_KAFKA_BROKERS=2, default 1): per cluster, a second node
# "source-2" / "target-2" (state dir STATE/source-2, ...) with
# process.roles=broker and node.id=2, joining the first node's controller
# quorum, with only a PLAINTEXT listener at *_BROKER2_PORT. A broker needs
# about one open file and two memory maps per partition it holds, and
# ulimit -n and vm.max_map_count are per process: two brokers per cluster
# hold twice the partitions (internal/bench scale). Partitions of new topics
# are spread over both brokers (replication factor 1 stays the default).
# The PROXIED and SASL listeners stay on the first node only: clients that
# bootstrap there see node 2 without an address on that listener, so they
# cannot reach partitions led by node 2; fault-proxy and SASL tests want the
# default of one broker. kill/restart NAME act on both nodes of the cluster.
BROKERS="${KMIRROR_KAFKA_BROKERS:-1}"
[[ "$BROKERS" == 1 || "$BROKERS" == 2 ]] || { echo "kafka.sh: KMIRROR_KAFKA_BROKERS=$BROKERS: want 1 or 2" >&2; exit 1; }
SOURCE_BROKER2_PORT="${KMIRROR_SOURCE_BROKER2_PORT:-$((SOURCE_PORT + 5))}"
TARGET_BROKER2_PORT="${KMIRROR_TARGET_BROKER2_PORT:-$((TARGET_PORT + 5))}"

HEAP_OPTS="${KMIRROR_KAFKA_HEAP_OPTS:--Xms64m -Xmx512m}"
JVM_OPTS="${KMIRROR_KAFKA_JVM_OPTS:--XX:+UseSerialGC -Djava.awt.headless=true}"
MM2_HEAP_OPTS="${KMIRROR_MM2_HEAP_OPTS:--Xms64m -Xmx512m}"
TOOL_JVM_OPTS="${KMIRROR_TOOL_JVM_OPTS:--Xmx256m -XX:+UseSerialGC -XX:TieredStopAtLevel=1}"
START_TIMEOUT="${KMIRROR_KAFKA_START_TIMEOUT:-180}"
SESSION_TIMEOUT_MS="${KMIRROR_KAFKA_BROKER_SESSION_TIMEOUT_MS:-30000}"
STOP_TIMEOUT="${KMIRROR_KAFKA_STOP_TIMEOUT:-30}"
MM2_START_TIMEOUT="${KMIRROR_MM2_START_TIMEOUT:-120}"

# The line each process logs once it is ready (checked against Kafka 4.3.1).
BROKER_READY='Kafka Server started'
MM2_READY='Kafka MirrorMaker started'

die() { echo "kafka.sh: $*" >&2; exit 1; }
now_ms() { date +%s%3N; }
secs_since() { local d=$(( $(now_ms) - $1 )); printf '%d.%d' $((d / 1000)) $(((d % 1000) / 100)); }
rss_mb() { awk '/^VmRSS:/ { printf "%d", $2 / 1024 }' "/proc/$1/status" 2>/dev/null || echo '?'; }
tail_log() { echo "--- last lines of $1:" >&2; tail -n "${2:-30}" "$1" >&2 2>/dev/null || true; echo "---" >&2; }

ports_of() { # node -> "port controller_port proxied_port proxy_port" ("-" for none)
  case "$1" in
    source) echo "$SOURCE_PORT $SOURCE_CONTROLLER_PORT $SOURCE_PROXIED_PORT $SOURCE_PROXY_PORT" ;;
    target) echo "$TARGET_PORT $TARGET_CONTROLLER_PORT $TARGET_PROXIED_PORT $TARGET_PROXY_PORT" ;;
    source-2) echo "$SOURCE_BROKER2_PORT $SOURCE_CONTROLLER_PORT - -" ;;
    target-2) echo "$TARGET_BROKER2_PORT $TARGET_CONTROLLER_PORT - -" ;;
    *) die "unknown cluster \"$1\" (want source or target)" ;;
  esac
}

# check_cluster NAME: fails unless NAME is source or target.
check_cluster() { [[ "$1" == source || "$1" == target ]] || die "unknown cluster \"$1\" (want source or target)"; }

# nodes_of NAME: the nodes of cluster NAME, one a line: NAME, then NAME-2
# with KMIRROR_KAFKA_BROKERS=2.
nodes_of() { echo "$1"; if [[ "$BROKERS" == 2 ]]; then echo "$1-2"; fi; }

# all_nodes: every node of both clusters.
all_nodes() { nodes_of source; nodes_of target; }

# running DIR MAINCLASS: prints the pid stored in DIR/pid when that process is
# alive and is the java process this script started there; fails otherwise.
running() {
  local dir="$1" main="$2" pid cmd
  [[ -f "$dir/pid" ]] || return 1
  pid="$(cat "$dir/pid")"
  [[ "$pid" =~ ^[0-9]+$ ]] || return 1
  cmd="$(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null)" || return 1
  [[ "$cmd" == *"$main"* && "$cmd" == *"$dir/"* ]] || return 1
  echo "$pid"
}

main_of() { [[ "$1" == mm2 ]] && echo org.apache.kafka.connect.mirror.MirrorMaker || echo kafka.Kafka; }

port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

write_log_configs() {
  mkdir -p "$STATE"
  # Servers: everything to stdout, which start redirects to DIR/server.log.
  cat >"$STATE/log4j2-server.properties" <<'EOF'
status = warn
appender.out.type = Console
appender.out.name = OUT
appender.out.target = SYSTEM_OUT
appender.out.layout.type = PatternLayout
appender.out.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = ${sys:kmirror.log.level:-INFO}
rootLogger.appenderRef.out.ref = OUT
logger.request.name = kafka.request.logger
logger.request.level = WARN
EOF
  # CLI tools: warnings and errors only, to stderr.
  cat >"$STATE/log4j2-tool.properties" <<'EOF'
status = warn
appender.err.type = Console
appender.err.name = ERR
appender.err.target = SYSTEM_ERR
appender.err.layout.type = PatternLayout
appender.err.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = WARN
rootLogger.appenderRef.err.ref = ERR
EOF
}

# install_stamp: what LIB/.complete holds once LIB is complete: the version and
# a checksum of pom.xml, so that editing the pom triggers a new install.
install_stamp() { echo "$KAFKA_VERSION $(cksum <"$HERE/pom.xml" | cut -d' ' -f1)"; }

installed() { [[ -f "$LIB/.complete" && "$(cat "$LIB/.complete")" == "$(install_stamp)" ]]; }

cmd_install() {
  if installed; then
    echo "install: Kafka $KAFKA_VERSION already in $LIB ($(ls "$LIB" | wc -l) jars)"
    return 0
  fi
  local name
  for name in source target source-2 target-2 mm2; do
    if [[ -d "$LIB" ]] && running "$STATE/$name" "$(main_of "$name")" >/dev/null; then
      die "install: $name is running from $LIB; run kafka.sh stop first"
    fi
  done
  command -v mvn >/dev/null || die "install: mvn not found (Maven 3.8+ and Java 17+ are needed)"
  command -v java >/dev/null || die "install: java not found (Java 17+ is needed)"
  local t0 tmp log bindings
  t0="$(now_ms)"
  mkdir -p "$KHOME"
  tmp="$KHOME/lib.tmp.$$"
  log="$KHOME/install.log"
  copy_jars "$tmp" "$log"
  # log4j-slf4j-impl must match the log4j-core Kafka brings; another
  # KAFKA_VERSION may bring another Log4j: copy again with that version.
  local core impl
  core="$(jar_version "$tmp" log4j-core)"
  impl="$(jar_version "$tmp" log4j-slf4j-impl)"
  if [[ -n "$core" && "$core" != "$impl" ]]; then
    copy_jars "$tmp" "$log" -Dlog4j2.version="$core"
  fi
  [[ -f "$tmp/kafka_2.13-$KAFKA_VERSION.jar" ]] || die "install: kafka_2.13-$KAFKA_VERSION.jar missing in $tmp"
  # Exactly one SLF4J binding (slf4j-api 1.7 picks one at random otherwise).
  local jar n=0
  bindings=""
  for jar in "$tmp"/*.jar; do
    case "${jar##*/}" in
      log4j-slf4j-impl-* | log4j-slf4j2-impl-* | slf4j-reload4j-* | slf4j-log4j12-* | slf4j-simple-* | \
        slf4j-jdk14-* | slf4j-nop-* | logback-classic-*)
        bindings="$bindings ${jar##*/}"
        n=$((n + 1))
        ;;
    esac
  done
  ((n == 1)) || die "install: want exactly one SLF4J binding, got:${bindings:- none}"
  rm -rf "$LIB"
  mv "$tmp" "$LIB"
  install_stamp >"$LIB/.complete"
  echo "install: Kafka $KAFKA_VERSION, $(ls "$LIB" | wc -l) jars ($(du -sm "$LIB" | cut -f1) MB) in $LIB, $(secs_since "$t0")s"
}

# copy_jars DIR LOG [mvn args...]: the runtime jars of pom.xml into DIR (emptied first).
copy_jars() {
  local dir="$1" log="$2"
  shift 2
  rm -rf "$dir"
  # shellcheck disable=SC2086 # KMIRROR_MAVEN_ARGS is a list, e.g. "-o" or "-s settings.xml"
  if ! mvn -q -B -Dstyle.color=never ${KMIRROR_MAVEN_ARGS:-} -f "$HERE/pom.xml" -Dkafka.version="$KAFKA_VERSION" "$@" \
      dependency:copy-dependencies -DincludeScope=runtime -DoutputDirectory="$dir" >"$log" 2>&1; then
    rm -rf "$dir"
    tail_log "$log" 40
    die "install: mvn could not resolve Kafka $KAFKA_VERSION (full log: $log; 4.3.1 is the newest version with every artifact on Maven Central)"
  fi
}

# jar_version DIR ARTIFACT: the version in DIR/ARTIFACT-<version>.jar, or nothing.
jar_version() {
  local jar
  for jar in "$1/$2"-[0-9]*.jar; do
    [[ -f "$jar" ]] || continue
    jar="${jar##*/}"
    jar="${jar#"$2"-}"
    echo "${jar%.jar}"
    return
  done
}

ensure_installed() {
  installed || cmd_install
}

write_server_properties() { # node dir port cport proxied_port proxy_port
  local node="$1" dir="$2" port="$3" cport="$4" pport="$5" xport="$6" name="${1%-2}"
  local sl="" sm="" sport="$SOURCE_SASL_PORT" suser="$SOURCE_SASL_USER" spw="$SOURCE_SASL_PASSWORD"
  if [[ "$name" == target ]]; then sport="$TARGET_SASL_PORT" suser="$TARGET_SASL_USER" spw="$TARGET_SASL_PASSWORD"; fi
  if [[ "$SASL" == 1 && "$node" == "$name" ]]; then
    sl=",SASL://127.0.0.1:$sport" sm=",SASL:SASL_PLAINTEXT"
  fi
  {
    if [[ "$node" == "$name" ]]; then
      cat <<EOF
# Generated by kafka.sh for the "$name" cluster; rewritten on every start.
process.roles=broker,controller
node.id=1
# PROXIED is bound at $pport and advertised at $xport, where a fault proxy
# forwards to $pport (nothing listens at $xport unless a proxy runs).
listeners=PLAINTEXT://127.0.0.1:$port,CONTROLLER://127.0.0.1:$cport,PROXIED://127.0.0.1:$pport$sl
advertised.listeners=PLAINTEXT://127.0.0.1:$port,PROXIED://127.0.0.1:$xport$sl
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT,PROXIED:PLAINTEXT$sm
EOF
    else
      cat <<EOF
# Generated by kafka.sh for the second broker of the "$name" cluster
# (KMIRROR_KAFKA_BROKERS=2); rewritten on every start. Broker only, no
# PROXIED or SASL listener; its controller is node 1 at $cport.
process.roles=broker
node.id=2
listeners=PLAINTEXT://127.0.0.1:$port
advertised.listeners=PLAINTEXT://127.0.0.1:$port
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT
EOF
    fi
    cat <<EOF
controller.listener.names=CONTROLLER
inter.broker.listener.name=PLAINTEXT
controller.quorum.bootstrap.servers=127.0.0.1:$cport
log.dirs=$dir/data
auto.create.topics.enable=false
num.partitions=1
default.replication.factor=1
offsets.topic.replication.factor=1
offsets.topic.num.partitions=1
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
transaction.state.log.num.partitions=1
share.coordinator.state.topic.replication.factor=1
share.coordinator.state.topic.min.isr=1
share.coordinator.state.topic.num.partitions=1
group.initial.rebalance.delay.ms=0
log.initial.task.delay.ms=1000
log.retention.check.interval.ms=1000
log.segment.delete.delay.ms=1000
# Fast hand-overs in tests: members may use session timeouts down to 0.5 s
# (default 6 s), and transactions of a killed producer that ran past their
# timeout are aborted within a second of it (default: checked every 10 s).
group.min.session.timeout.ms=500
transaction.abort.timed.out.transaction.cleanup.interval.ms=1000
# Tolerate a loaded 2-core machine: a broker whose heartbeats to its own
# controller are late is fenced after this long (default 9000). A broker
# restarted after SIGKILL registers again only once this has passed.
broker.session.timeout.ms=$SESSION_TIMEOUT_MS
num.network.threads=2
num.io.threads=2
background.threads=2
num.recovery.threads.per.data.dir=1
EOF
    if [[ "$SASL" == 1 && "$node" == "$name" ]]; then
      cat <<EOF
# SASL listener (KMIRROR_KAFKA_SASL=1): PLAIN users, enforced ACLs. The
# controller and inter-broker traffic (PLAINTEXT, CONTROLLER) is ANONYMOUS,
# a super user; so is the admin user.
authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer
super.users=User:ANONYMOUS;User:$SASL_ADMIN_USER
allow.everyone.if.no.acl.found=false
sasl.enabled.mechanisms=PLAIN
listener.name.sasl.sasl.enabled.mechanisms=PLAIN
listener.name.sasl.plain.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required user_$SASL_ADMIN_USER="$SASL_ADMIN_PASSWORD" user_$suser="$spw";
EOF
    elif [[ "$SASL" == 1 || "${KMIRROR_KAFKA_AUTHORIZER:-0}" == 1 ]]; then
      cat <<'EOF'
authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer
super.users=User:ANONYMOUS
EOF
    fi
    if [[ -n "${KMIRROR_KAFKA_EXTRA_PROPERTIES:-}" ]]; then
      echo "# from $KMIRROR_KAFKA_EXTRA_PROPERTIES"
      cat "$KMIRROR_KAFKA_EXTRA_PROPERTIES"
    fi
  } >"$dir/server.properties"
}

random_cluster_id() { # a base64url UUID like StorageTool random-uuid prints
  local id
  while :; do
    id="$(head -c 16 /dev/urandom | base64 | tr '+/' '-_' | tr -d '=')"
    [[ "$id" != -* ]] && { echo "$id"; return; }
  done
}

# format_cluster NODE DIR KEEP -> prints nothing, fails with the format log.
# A first node gets a new cluster ID and a one-voter quorum (--standalone);
# a second node (NAME-2, broker only) the cluster ID of its first node.
format_cluster() {
  local node="$1" dir="$2" keep="$3" name="${1%-2}" id mode=(--standalone)
  if [[ "$keep" == 1 && -f "$dir/data/meta.properties" ]]; then
    return 0
  fi
  rm -rf "$dir/data"
  id="$(random_cluster_id)"
  if [[ "$node" != "$name" ]]; then
    id="$(cluster_id "$STATE/$name")"
    [[ "$id" != '?' ]] || die "start: the $name cluster has no ID for its second broker (format $name first)"
    mode=()
  fi
  if ! java -Xmx256m -XX:+UseSerialGC -XX:TieredStopAtLevel=1 \
      -Dlog4j2.configurationFile="$STATE/log4j2-tool.properties" -cp "$LIB/*" \
      kafka.tools.StorageTool format --config "$dir/server.properties" \
      --cluster-id "$id" "${mode[@]+"${mode[@]}"}" >"$dir/format.log" 2>&1; then
    tail_log "$dir/format.log"
    die "start: formatting $node failed"
  fi
}

launch_cluster() { # node dir
  local name="$1" dir="$2"
  # The log of the previous run (e.g. before a restart) stays as server.log.1.
  if [[ -s "$dir/server.log" ]]; then mv -f "$dir/server.log" "$dir/server.log.1"; fi
  : >"$dir/server.log"
  # shellcheck disable=SC2086 # option lists are split on purpose
  setsid java $HEAP_OPTS $JVM_OPTS -Dlog4j2.configurationFile="$STATE/log4j2-server.properties" \
    -cp "$LIB/*" kafka.Kafka "$dir/server.properties" >"$dir/server.log" 2>&1 </dev/null &
  echo "$!" >"$dir/pid"
}

# cmd_start [NAME]: both clusters, reformatted unless KMIRROR_KAFKA_KEEP=1;
# or one cluster, keeping its data when it was formatted before. Each
# cluster is one node, or two with KMIRROR_KAFKA_BROKERS=2.
cmd_start() {
  local names=(source target) keep="${KMIRROR_KAFKA_KEEP:-0}"
  if [[ $# -gt 0 ]]; then
    check_cluster "$1"
    names=("$1")
    keep=1
  fi
  ensure_installed
  write_log_configs
  local name node dir port cport pport xport pid todo=() t0
  for name in "${names[@]}"; do
    for node in $(nodes_of "$name"); do
      dir="$STATE/$node"
      mkdir -p "$dir"
      if pid="$(running "$dir" kafka.Kafka)"; then
        continue
      fi
      read -r port cport pport xport <<<"$(ports_of "$node")"
      # A second node binds only its own port; the controller is node 1's.
      local bind=("$port")
      if [[ "$node" == "$name" ]]; then bind+=("$cport" "$pport"); fi
      for p in "${bind[@]}"; do
        port_open "$p" && die "start: 127.0.0.1:$p ($node) is taken by another process"
      done
      write_server_properties "$node" "$dir" "$port" "$cport" "$pport" "$xport"
      todo+=("$node")
    done
  done
  if [[ ${#todo[@]} == 0 ]]; then
    echo "start: already running"
    cmd_status
    return 0
  fi
  t0="$(now_ms)"
  # First nodes, then second nodes: these take the cluster ID of the first.
  local fpids=() pass
  for pass in first second; do
    fpids=()
    for node in "${todo[@]}"; do
      if [[ "$pass" == first && "$node" == *-2 ]] || [[ "$pass" == second && "$node" != *-2 ]]; then continue; fi
      format_cluster "$node" "$STATE/$node" "$keep" &
      fpids+=("$!")
    done
    for pid in "${fpids[@]+"${fpids[@]}"}"; do wait "$pid" || exit 1; done
  done
  for node in "${todo[@]}"; do launch_cluster "$node" "$STATE/$node"; done
  local waiting=("${todo[@]}") left deadline=$(( $(now_ms) + START_TIMEOUT * 1000 ))
  local -A secs=()
  while ((${#waiting[@]})); do
    left=()
    for name in "${waiting[@]}"; do
      dir="$STATE/$name"
      read -r port cport pport xport <<<"$(ports_of "$name")"
      if ! kill -0 "$(cat "$dir/pid")" 2>/dev/null; then
        tail_log "$dir/server.log" 40
        die "start: the $name broker exited during start-up (log: $dir/server.log)"
      fi
      if grep -q "$BROKER_READY" "$dir/server.log" && port_open "$port" && { [[ "$pport" == - ]] || port_open "$pport"; }; then
        secs[$name]="$(secs_since "$t0")"
      else
        left+=("$name")
      fi
    done
    waiting=("${left[@]+"${left[@]}"}")
    if ((${#waiting[@]})); then
      if (($(now_ms) > deadline)); then
        for name in "${waiting[@]}"; do
          tail_log "$STATE/$name/server.log" 40
          stop_process "$STATE/$name" kafka.Kafka "$name broker" >/dev/null || true
        done
        die "start: ${waiting[*]} not ready after ${START_TIMEOUT}s (KMIRROR_KAFKA_START_TIMEOUT)"
      fi
      sleep 0.2
    fi
  done
  for name in "${todo[@]}"; do
    dir="$STATE/$name"
    read -r port cport pport xport <<<"$(ports_of "$name")"
    pid="$(running "$dir" kafka.Kafka)"
    if [[ "$pport" == - ]]; then
      echo "start: $name 127.0.0.1:$port (broker only, controller $cport) cluster $(cluster_id "$dir") ready in ${secs[$name]}s, RSS $(rss_mb "$pid") MB, pid $pid"
      continue
    fi
    echo "start: $name 127.0.0.1:$port (controller $cport, proxied $pport advertised as $xport) cluster $(cluster_id "$dir") ready in ${secs[$name]}s, RSS $(rss_mb "$pid") MB, pid $pid"
  done
}

# signal_of WORD: TERM or KILL (the default is TERM).
signal_of() {
  case "${1:-TERM}" in
    TERM | SIGTERM | term) echo TERM ;;
    KILL | SIGKILL | kill | 9) echo KILL ;;
    *) die "unknown signal \"$1\" (want TERM or KILL)" ;;
  esac
}

# cmd_kill NAME [TERM|KILL]: stops the cluster's broker (both, second
# first, with KMIRROR_KAFKA_BROKERS=2), keeping its data. TERM: a clean
# shutdown (SIGKILL after KMIRROR_KAFKA_STOP_TIMEOUT); KILL: SIGKILL at
# once, as a crash. Returns when the processes are gone.
cmd_kill() {
  [[ $# -ge 1 ]] || die "usage: kafka.sh kill source|target [TERM|KILL]"
  check_cluster "$1"
  local sig node
  sig="$(signal_of "${2:-TERM}")"
  for node in $(nodes_of "$1" | sort -r); do kill_node "$node" "$sig"; done
}

# kill_node NODE TERM|KILL: cmd_kill for one node.
kill_node() {
  local name="$1" sig="$2" dir pid t0
  dir="$STATE/$name"
  if ! pid="$(running "$dir" kafka.Kafka)"; then
    echo "kill: $name broker not running"
    return 0
  fi
  if [[ "$sig" == TERM ]]; then
    stop_process "$dir" kafka.Kafka "$name broker" | sed 's/^stop:/kill:/'
    return 0
  fi
  t0="$(now_ms)"
  kill -KILL "$pid" 2>/dev/null || true
  while kill -0 "$pid" 2>/dev/null; do sleep 0.05; done
  rm -f "$dir/pid"
  echo "kill: $name broker (pid $pid) killed with SIGKILL in $(secs_since "$t0")s"
}

# cmd_restart NAME [TERM|KILL]: cmd_kill, then start that broker again on
# its data, and wait until it is ready.
cmd_restart() {
  [[ $# -ge 1 ]] || die "usage: kafka.sh restart source|target [TERM|KILL]"
  check_cluster "$1"
  signal_of "${2:-TERM}" >/dev/null
  cmd_kill "$@"
  cmd_start "$1"
}

cluster_id() { sed -n 's/^cluster.id=//p' "$1/data/meta.properties" 2>/dev/null || echo '?'; }

# stop_process DIR MAINCLASS LABEL: SIGTERM, then SIGKILL after STOP_TIMEOUT.
stop_process() {
  local dir="$1" main="$2" label="$3" pid t0 deadline
  if ! pid="$(running "$dir" "$main")"; then
    rm -f "$dir/pid"
    return 1
  fi
  t0="$(now_ms)"
  deadline=$(( t0 + STOP_TIMEOUT * 1000 ))
  kill -TERM "$pid" 2>/dev/null || true
  while kill -0 "$pid" 2>/dev/null; do
    if (($(now_ms) > deadline)); then
      kill -KILL "$pid" 2>/dev/null || true
      echo "stop: $label (pid $pid) killed after ${STOP_TIMEOUT}s"
      rm -f "$dir/pid"
      return 0
    fi
    sleep 0.1
  done
  rm -f "$dir/pid"
  echo "stop: $label stopped in $(secs_since "$t0")s"
}

cmd_stop() {
  stop_process "$STATE/mm2" org.apache.kafka.connect.mirror.MirrorMaker "mm2" || true
  local name any=0 pids=() wave
  # Stop both clusters at once; each broker waits for its own clean
  # shutdown. Second nodes (KMIRROR_KAFKA_BROKERS=2, or left by such a run)
  # go first: their clean shutdown needs the controller on the first node.
  for wave in "source-2 target-2" "source target"; do
    pids=()
    for name in $wave; do
      if running "$STATE/$name" kafka.Kafka >/dev/null; then
        any=1
        stop_process "$STATE/$name" kafka.Kafka "$name broker" &
        pids+=("$!")
      fi
    done
    for p in "${pids[@]+"${pids[@]}"}"; do wait "$p" || true; done
  done
  ((any)) || echo "stop: not running"
}

cmd_status() {
  local name dir port cport pport xport pid rc=0
  for name in $(all_nodes); do
    dir="$STATE/$name"
    read -r port cport pport xport <<<"$(ports_of "$name")"
    if pid="$(running "$dir" kafka.Kafka)" && [[ "$pport" == - ]]; then
      echo "status: $name 127.0.0.1:$port running (broker only), cluster $(cluster_id "$dir"), pid $pid, RSS $(rss_mb "$pid") MB"
    elif [[ -n "$pid" ]]; then
      echo "status: $name 127.0.0.1:$port running (proxied $pport advertised as $xport), cluster $(cluster_id "$dir"), pid $pid, RSS $(rss_mb "$pid") MB"
    else
      echo "status: $name 127.0.0.1:$port stopped"
      rc=3
    fi
  done
  if pid="$(running "$STATE/mm2" org.apache.kafka.connect.mirror.MirrorMaker)"; then
    echo "status: mm2 running, pid $pid, RSS $(rss_mb "$pid") MB"
  fi
  return "$rc"
}

cmd_env() {
  local src="127.0.0.1:$SOURCE_PORT" dst="127.0.0.1:$TARGET_PORT"
  if [[ "$BROKERS" == 2 ]]; then
    src+=",127.0.0.1:$SOURCE_BROKER2_PORT" dst+=",127.0.0.1:$TARGET_BROKER2_PORT"
  fi
  echo "export KMIRROR_SOURCE_BROKERS=$src KMIRROR_TARGET_BROKERS=$dst" \
    "KMIRROR_SOURCE_PROXIED_BROKERS=127.0.0.1:$SOURCE_PROXY_PORT KMIRROR_TARGET_PROXIED_BROKERS=127.0.0.1:$TARGET_PROXY_PORT" \
    "KMIRROR_SOURCE_PROXIED_LISTENER=127.0.0.1:$SOURCE_PROXIED_PORT KMIRROR_TARGET_PROXIED_LISTENER=127.0.0.1:$TARGET_PROXIED_PORT"
  if [[ "$SASL" == 1 ]]; then
    # Test-only credentials of the local clusters (KMIRROR_*_SASL_* set them).
    echo "export KMIRROR_SOURCE_SASL_BROKERS=127.0.0.1:$SOURCE_SASL_PORT KMIRROR_TARGET_SASL_BROKERS=127.0.0.1:$TARGET_SASL_PORT" \
      "KMIRROR_SASL_ADMIN_USER=$SASL_ADMIN_USER KMIRROR_SASL_ADMIN_PASSWORD=$SASL_ADMIN_PASSWORD" \
      "KMIRROR_SOURCE_SASL_USER=$SOURCE_SASL_USER KMIRROR_SOURCE_SASL_PASSWORD=$SOURCE_SASL_PASSWORD" \
      "KMIRROR_TARGET_SASL_USER=$TARGET_SASL_USER KMIRROR_TARGET_SASL_PASSWORD=$TARGET_SASL_PASSWORD"
  fi
}

cmd_classpath() { echo "$LIB/*"; }

cmd_mm2() {
  local sub="${1:-}" dir="$STATE/mm2" pid t0 deadline main=org.apache.kafka.connect.mirror.MirrorMaker
  shift || true
  case "$sub" in
    start)
      local props="${1:-}"
      [[ -n "$props" ]] || die "usage: kafka.sh mm2 start PROPERTIES [MirrorMaker args...]"
      [[ -f "$props" ]] || die "mm2 start: no such file: $props"
      shift
      props="$(cd "$(dirname "$props")" && pwd)/$(basename "$props")"
      ensure_installed
      write_log_configs
      mkdir -p "$dir"
      if pid="$(running "$dir" "$main")"; then
        die "mm2 start: already running (pid $pid); run kafka.sh mm2 stop first"
      fi
      : >"$dir/mm2.log"
      t0="$(now_ms)"
      # -Dkmirror.state lets running() tell this MirrorMaker from any other one.
      # shellcheck disable=SC2086
      setsid java $MM2_HEAP_OPTS $JVM_OPTS -Dlog4j2.configurationFile="$STATE/log4j2-server.properties" \
        -Dkmirror.state="$dir/" -cp "$LIB/*" "$main" "$props" "$@" >"$dir/mm2.log" 2>&1 </dev/null &
      pid="$!"
      echo "$pid" >"$dir/pid"
      deadline=$(( t0 + MM2_START_TIMEOUT * 1000 ))
      while :; do
        # kill -0, not running(): right after the fork, cmdline is not java's yet.
        if ! kill -0 "$pid" 2>/dev/null; then
          tail_log "$dir/mm2.log" 40
          die "mm2 start: MirrorMaker exited during start-up (log: $dir/mm2.log)"
        fi
        grep -q "$MM2_READY" "$dir/mm2.log" && break
        if (($(now_ms) > deadline)); then
          tail_log "$dir/mm2.log" 40
          stop_process "$dir" "$main" mm2 >/dev/null || true
          die "mm2 start: not ready after ${MM2_START_TIMEOUT}s (KMIRROR_MM2_START_TIMEOUT)"
        fi
        sleep 0.2
      done
      echo "mm2 start: MirrorMaker ready in $(secs_since "$t0")s, RSS $(rss_mb "$pid") MB, pid $pid, log $dir/mm2.log"
      ;;
    stop)
      stop_process "$dir" "$main" mm2 || echo "mm2 stop: not running"
      ;;
    status)
      if pid="$(running "$dir" "$main")"; then
        echo "mm2 status: running, pid $pid, RSS $(rss_mb "$pid") MB"
      else
        echo "mm2 status: stopped"
        return 3
      fi
      ;;
    *) die "usage: kafka.sh mm2 start PROPERTIES [args...] | mm2 stop | mm2 status" ;;
  esac
}

cmd_tool() {
  [[ $# -ge 1 ]] || die "usage: kafka.sh tool CLASS [args...]"
  ensure_installed >&2
  write_log_configs
  # shellcheck disable=SC2086
  exec java $TOOL_JVM_OPTS -Dlog4j2.configurationFile="$STATE/log4j2-tool.properties" -cp "$LIB/*" "$@"
}

case "${1:-}" in
  install) cmd_install ;;
  start) shift; cmd_start "$@" ;;
  kill) shift; cmd_kill "$@" ;;
  restart) shift; cmd_restart "$@" ;;
  stop) cmd_stop ;;
  status) cmd_status ;;
  env) cmd_env ;;
  classpath) cmd_classpath ;;
  mm2) shift; cmd_mm2 "$@" ;;
  tool) shift; cmd_tool "$@" ;;
  *)
    sed -n '2,12s/^# \{0,1\}//p' "$0" >&2
    exit 2
    ;;
esac
