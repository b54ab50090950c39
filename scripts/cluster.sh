#!/usr/bin/env bash
# A local federation on loopback: `scripts/cluster.sh start N | stop | status | formed [SECONDS]`.
#   start N  creates a federation CA and N node certificates (each binding the node's PeerId),
#            starts N svc-node daemons with their own data directories, bootstrapped to each other,
#            and prints each node's REST endpoint and PeerId.
#   stop     stops the daemons this script started (by the pids it recorded).
#   status   shows which of them run and how many federation members each sees.
#   formed   waits (at most SECONDS, default 120) until every running node lists every running node.
# Environment: CLUSTER_DIR (default ./.cluster), CLUSTER_REST_PORT (default 7100: node i listens on
# 7100+i), CLUSTER_P2P_PORT (default 7200: libp2p on 7200+i), CLUSTER_WORKERS (sandbox workers per
# node, default 1, started on a node's first execution), CLUSTER_WAVE (nodes started at once before
# waiting for them to answer, default 4: twenty daemons starting together on two cores starve each
# other), CLUSTER_MEMBERSHIP_TIMEOUT_MS (federation.membership_timeout_ms, default 15000: a starved
# machine answers slowly). Needs `npm run build` first.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
DIR="${CLUSTER_DIR:-$ROOT/.cluster}"
REST_BASE="${CLUSTER_REST_PORT:-7100}"
P2P_BASE="${CLUSTER_P2P_PORT:-7200}"
WORKERS="${CLUSTER_WORKERS:-1}"
WAVE="${CLUSTER_WAVE:-4}"
SVC=(node "$ROOT/bin/svc.js")

die() { echo "cluster.sh: $*" >&2; exit 1; }

start() {
  local n="${1:-}"
  [[ "$n" =~ ^[1-9][0-9]*$ ]] || die "usage: cluster.sh start N"
  [[ -f "$ROOT/dist/federation/daemon-wiring.js" ]] || die "run 'npm run build' first"
  if compgen -G "$DIR/node*/pid" > /dev/null; then die "a cluster already runs in $DIR (cluster.sh stop first)"; fi
  mkdir -p "$DIR"
  [[ -f "$DIR/ca/ca.crt" ]] || "${SVC[@]}" federation ca init --out "$DIR/ca" > /dev/null
  local ids=() i
  for ((i = 1; i <= n; i++)); do
    local data="$DIR/node$i"
    mkdir -p "$data"
    ids[i]="$("${SVC[@]}" federation peer-id --data-dir "$data")"
    [[ -f "$data/cert/node.crt" ]] || "${SVC[@]}" federation cert issue --ca "$DIR/ca" --data-dir "$data" --out "$data/cert" > /dev/null
  done
  for ((i = 1; i <= n; i++)); do
    local data="$DIR/node$i" peers="" j
    for ((j = 1; j <= n; j++)); do
      [[ $j -eq $i ]] || peers+="      - /ip4/127.0.0.1/tcp/$((P2P_BASE + j))/p2p/${ids[j]}"$'\n'
    done
    cat > "$data/config.yaml" <<YAML
server:
  host: 127.0.0.1
  port: $((REST_BASE + i))
data_dir: $data
federation:
  enabled: true
  listen:
    - /ip4/127.0.0.1/tcp/$((P2P_BASE + i))
  bootstrap:
${peers:-    []}
  ca_file: $DIR/ca/ca.crt
  cert_file: $data/cert/node.crt
  membership_timeout_ms: ${CLUSTER_MEMBERSHIP_TIMEOUT_MS:-15000}
YAML
    GRPC_PORT=0 AUTH_PROVIDER="${AUTH_PROVIDER:-none}" SVC_SANDBOX_WORKERS="$WORKERS" SVC_SANDBOX_WORKERS_ON_DEMAND=true \
      nohup node "$ROOT/bin/svc-node.js" start --config "$data/config.yaml" > "$data/node.log" 2>&1 &
    echo $! > "$data/pid"
    if (( i % WAVE == 0 || i == n )); then
      local k
      for ((k = i - (i - 1) % WAVE; k <= i; k++)); do wait_up "$k"; done
    fi
  done
}

# waits for node $1 to answer /healthz and prints its line
wait_up() {
  local i="$1" url="http://127.0.0.1:$((REST_BASE + $1))" tries=0
  until curl -fsS "$url/healthz" > /dev/null 2>&1; do
    tries=$((tries + 1))
    if [[ $tries -gt 300 ]]; then tail -20 "$DIR/node$i/node.log" >&2; die "node$i did not start"; fi
    kill -0 "$(cat "$DIR/node$i/pid")" 2> /dev/null || { tail -20 "$DIR/node$i/node.log" >&2; die "node$i exited"; }
    sleep 0.2
  done
  echo "node$i  $url  ${ids[$i]}"
}

stop() {
  local f pid
  for f in "$DIR"/node*/pid; do
    [[ -f "$f" ]] || continue
    pid="$(cat "$f")"
    if kill -0 "$pid" 2> /dev/null; then kill -TERM "$pid"; fi
    for _ in $(seq 1 50); do kill -0 "$pid" 2> /dev/null || break; sleep 0.1; done
    rm -f "$f"
    echo "stopped $(basename "$(dirname "$f")") (pid $pid)"
  done
}

# waits until every running node lists every running node (at most $1 seconds, default 120)
formed() {
  local limit="${1:-120}" start now counts d port want
  start=$(date +%s.%N)
  while true; do
    want=0 counts=""
    for d in "$DIR"/node*/; do
      [[ -f "$d/pid" ]] && kill -0 "$(cat "$d/pid")" 2> /dev/null || continue
      want=$((want + 1))
    done
    local ok=1
    for d in "$DIR"/node*/; do
      [[ -f "$d/pid" ]] && kill -0 "$(cat "$d/pid")" 2> /dev/null || continue
      port="$(sed -n 's/^  port: //p' "$d/config.yaml" | head -1)"
      local k
      k="$(curl -fsS -H 'x-svc-namespace: default' "http://127.0.0.1:$port/api/v1/federation/nodes" 2> /dev/null | node -e 'let s="";process.stdin.on("data",c=>s+=c).on("end",()=>{try{console.log(JSON.parse(s).nodes.length)}catch{console.log(0)}})')"
      counts+="$k "
      [[ "$k" -eq "$want" ]] || ok=0
    done
    now=$(date +%s.%N)
    if [[ $ok -eq 1 ]]; then printf 'formed: %d nodes each list %d, %.1f s\n' "$want" "$want" "$(echo "$now - $start" | bc)"; return 0; fi
    if (( $(echo "$now - $start > $limit" | bc) )); then echo "not formed after $limit s: nodes listed per node: $counts" >&2; return 1; fi
    sleep 1
  done
}

status() {
  local d i
  for d in "$DIR"/node*/; do
    [[ -f "$d/config.yaml" ]] || continue
    i="$(basename "$d")"
    local port state members="-"
    port="$(sed -n 's/^  port: //p' "$d/config.yaml" | head -1)"
    if [[ -f "$d/pid" ]] && kill -0 "$(cat "$d/pid")" 2> /dev/null; then
      state=running
      members="$(curl -fsS -H 'x-svc-namespace: default' "http://127.0.0.1:$port/api/v1/federation/nodes" 2> /dev/null | node -e 'let s="";process.stdin.on("data",c=>s+=c).on("end",()=>{try{console.log(JSON.parse(s).nodes.length)}catch{console.log("?")}})')"
    else
      state=stopped
    fi
    echo "$i  http://127.0.0.1:$port  $state  nodes=$members"
  done
}

case "${1:-}" in
  start) shift; start "$@" ;;
  stop) stop ;;
  status) status ;;
  formed) shift; formed "$@" ;;
  *) die "usage: cluster.sh start N | stop | status | formed [SECONDS]" ;;
esac
