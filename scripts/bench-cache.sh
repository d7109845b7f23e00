#!/usr/bin/env bash
# bench-cache.sh: dnsperf against three caching forwarders — kudurru
# (bin/kudurru serve), Unbound and Knot Resolver (kresd) — each forwarding to
# the same loopback upstream (NSD serving a generated zone of NAMES names),
# cache-hot, side by side in one run.
#
# Each forwarder is warmed with one pass over every name, then each round
# runs dnsperf for DURATION seconds against each forwarder in turn; REPS
# rounds; medians are reported: queries per second, mean latency, and the
# server's CPU time per answered query (utime+stime of its process tree from
# /proc over the run, divided by the queries completed), with ratios against
# Unbound. Then REPS latency rounds send LAT_QPS queries a second for
# LAT_DURATION seconds to each, far below saturation, so that the mean
# latency measured is the server's own rather than time spent queued. Only
# 127.0.0.1 is used; every process started here is stopped on
# exit. The upstream gets no traffic while measuring (all hits).
#
# Environment: DURATION (10), REPS (3), NAMES (10000), CLIENTS (dnsperf -c,
# 8), THREADS (dnsperf -T, 1), OUTSTANDING (dnsperf -q, 200), LAT_QPS (the
# fixed rate of the latency rounds, 20000; 0 skips them), LAT_DURATION (5),
# SERVER_THREADS (Unbound threads, kresd processes, kudurru GOMAXPROCS;
# default: CPUs), KUDURRU (binary, bin/kudurru).
set -euo pipefail

DURATION=${DURATION:-10}
REPS=${REPS:-3}
NAMES=${NAMES:-10000}
CLIENTS=${CLIENTS:-8}
THREADS=${THREADS:-1}
OUTSTANDING=${OUTSTANDING:-200}
LAT_QPS=${LAT_QPS:-20000}
LAT_DURATION=${LAT_DURATION:-5}
SERVER_THREADS=${SERVER_THREADS:-$(nproc)}

cd "$(dirname "$0")/.."
KUDURRU=${KUDURRU:-bin/kudurru}
NSD=${NSD:-$(command -v nsd || echo /usr/sbin/nsd)}
UNBOUND=${UNBOUND:-$(command -v unbound || echo /usr/sbin/unbound)}
KRESD=${KRESD:-$(command -v kresd || echo /usr/sbin/kresd)}
for tool in dnsperf dig curl python3; do
	command -v "$tool" >/dev/null || { echo "$tool not found (make bench-deps)" >&2; exit 1; }
done
for bin in "$NSD" "$UNBOUND" "$KRESD"; do
	[ -x "$bin" ] || { echo "$bin not found (make bench-deps)" >&2; exit 1; }
done
[ -x "$KUDURRU" ] || { echo "$KUDURRU not found (make build)" >&2; exit 1; }

work=$(mktemp -d)
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
	rm -rf "$work"
}
trap cleanup EXIT

# free_port: a port free for UDP and TCP on 127.0.0.1 a moment ago.
free_port() {
	python3 - <<'PY'
import socket
while True:
    u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); u.bind(("127.0.0.1", 0))
    port = u.getsockname()[1]
    t = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        t.bind(("127.0.0.1", port)); print(port); break
    except OSError:
        pass
    finally:
        t.close(); u.close()
PY
}

# wait_answer NAME PORT QNAME: poll until the server at PORT answers QNAME
# (NOERROR), at most 30 s.
wait_answer() {
	for _ in $(seq 300); do
		if dig +time=1 +tries=1 @127.0.0.1 -p "$2" "$3" A 2>/dev/null | grep -q 'status: NOERROR'; then
			return 0
		fi
		sleep 0.1
	done
	echo "$1 did not answer $3 on port $2" >&2
	return 1
}

# --- the upstream: NSD with a generated zone --------------------------------
nport=$(free_port)
{
	echo '$TTL 86400'
	echo '@ IN SOA ns1.bench.test. hostmaster.bench.test. 1 3600 600 86400 3600'
	echo '@ IN NS ns1.bench.test.'
	echo 'ns1 IN A 192.0.2.53'
	awk -v n="$NAMES" 'BEGIN { for (i = 0; i < n; i++) printf "host%d IN A 10.%d.%d.%d\n", i, int(i/65536)%256, int(i/256)%256, i%256 }'
} >"$work/bench.test.zone"
awk -v n="$NAMES" 'BEGIN { for (i = 0; i < n; i++) printf "host%d.bench.test A\n", i }' >"$work/queries.txt"
cat >"$work/nsd.conf" <<CONF
server:
	ip-address: 127.0.0.1@$nport
	server-count: 1
	username: ""
	chroot: ""
	zonesdir: "$work"
	pidfile: "$work/nsd.pid"
	database: ""
	xfrdfile: "$work/xfrd.state"
	xfrdir: "$work"
	zonelistfile: "$work/zone.list"
	logfile: "$work/nsd.log"
	rrl-ratelimit: 0
	rrl-whitelist-ratelimit: 0
remote-control:
	control-enable: no
zone:
	name: "bench.test."
	zonefile: "$work/bench.test.zone"
CONF
"$NSD" -d -c "$work/nsd.conf" >"$work/nsd.out" 2>&1 &
pids+=($!)
wait_answer nsd "$nport" host0.bench.test

# --- kudurru -----------------------------------------------------------------
kport=$(free_port)
cat >"$work/kudurru.yaml" <<CONF
dns:
  udp_sockets: $SERVER_THREADS
  forward:
    - zone: .
      upstreams: [udp://127.0.0.1:$nport]
  upstream:
    health_check_interval: 0s
  cache:
    max_bytes: 134217728
    persist_interval: 0s
log:
  level: warn
CONF
kapi=$(free_port)
GOMAXPROCS=$SERVER_THREADS "$KUDURRU" serve --node-id bench --data-dir "$work/kudurru" --bootstrap \
	--api-addr "127.0.0.1:$kapi" --raft-addr "127.0.0.1:$(free_port)" \
	--dns-addr "127.0.0.1:$kport" --config "$work/kudurru.yaml" >"$work/kudurru.log" 2>&1 &
kpid=$!
pids+=($kpid)
wait_answer kudurru "$kport" host0.bench.test || { cat "$work/kudurru.log"; exit 1; }

# --- Unbound -----------------------------------------------------------------
uport=$(free_port)
cat >"$work/unbound.conf" <<CONF
server:
	username: ""
	chroot: ""
	directory: "$work"
	pidfile: ""
	do-daemonize: no
	use-syslog: no
	logfile: "$work/unbound.log"
	verbosity: 0
	interface: 127.0.0.1@$uport
	port: $uport
	do-ip6: no
	access-control: 127.0.0.0/8 allow
	module-config: "iterator"
	num-threads: $SERVER_THREADS
	so-reuseport: yes
	msg-cache-size: 64m
	rrset-cache-size: 128m
	do-not-query-localhost: no
	local-zone: "test." nodefault
remote-control:
	control-enable: no
forward-zone:
	name: "."
	forward-addr: 127.0.0.1@$nport
CONF
"$UNBOUND" -d -c "$work/unbound.conf" >"$work/unbound.out" 2>&1 &
upid=$!
pids+=($upid)
wait_answer unbound "$uport" host0.bench.test || { cat "$work/unbound.out" "$work/unbound.log"; exit 1; }

# --- Knot Resolver: one process per server thread, SO_REUSEPORT, one cache ---
rport=$(free_port)
mkdir -p "$work/kresd"
cat >"$work/kresd.conf" <<CONF
net.listen('127.0.0.1', $rport, { kind = 'dns' })
cache.open(192 * MB, 'lmdb://$work/kresd/cache')
trust_anchors.remove('.')
policy.add(policy.all(policy.FORWARD('127.0.0.1@$nport')))
CONF
# kresd processes share the cache; count them all through a wrapper shell.
(
	for _ in $(seq "$SERVER_THREADS"); do
		"$KRESD" -n -c "$work/kresd.conf" "$work/kresd" >>"$work/kresd.log" 2>&1 &
	done
	trap 'kill $(jobs -p) 2>/dev/null; wait' TERM
	wait
) &
rpid=$!
pids+=($rpid)
wait_answer kresd "$rport" host0.bench.test || { cat "$work/kresd.log"; exit 1; }

# cpu_ticks PID: utime+stime of PID and all its descendants, in clock ticks.
cpu_ticks() {
	awk -v root="$1" '
		FNR == 1 {
			line = $0
			sub(/^.*\) /, "", line)   # drop "pid (comm) "; comm may hold spaces
			split(line, f, " ")
			pid = FILENAME; sub(/^\/proc\//, "", pid); sub(/\/stat$/, "", pid)
			ppid[pid] = f[2]; cpu[pid] = f[12] + f[13]
		}
		END {
			total = 0
			for (p in cpu) {
				q = p
				while (q != "" && q != root && q != 0 && q in ppid) q = ppid[q]
				if (q == root) total += cpu[p]
			}
			print total
		}' /proc/[0-9]*/stat 2>/dev/null || true # processes come and go while awk reads
}

# kudurru_upstream_requests: kudurru's queries to the upstream so far.
kudurru_upstream_requests() {
	curl -fsS "http://127.0.0.1:$kapi/metrics" 2>/dev/null |
		awk '/^kudurru_upstream_requests_total/ {n += $NF} END {print n + 0}'
}

servers=(kudurru unbound kresd)
declare -A port=([kudurru]=$kport [unbound]=$uport [kresd]=$rport)
declare -A pid=([kudurru]=$kpid [unbound]=$upid [kresd]=$rpid)

echo "warming each cache with one pass over $NAMES names..."
for s in "${servers[@]}"; do
	out=$(dnsperf -s 127.0.0.1 -p "${port[$s]}" -d "$work/queries.txt" -n 1 -c "$CLIENTS" -q "$OUTSTANDING" 2>&1)
	lost=$(awk '/Queries lost:/ {print $3}' <<<"$out")
	codes=$(awk -F': *' '/Response codes:/ {print $2}' <<<"$out")
	printf "  %-8s %s; %s lost\n" "$s" "${codes:-no answers}" "${lost:-?}"
done

hz=$(getconf CLK_TCK)
declare -A qps lat cpu
run() { # server round
	local s=$1 t0 t1 out completed rate mean
	t0=$(cpu_ticks "${pid[$s]}")
	out=$(dnsperf -s 127.0.0.1 -p "${port[$s]}" -d "$work/queries.txt" -l "$DURATION" \
		-c "$CLIENTS" -T "$THREADS" -q "$OUTSTANDING" 2>&1)
	t1=$(cpu_ticks "${pid[$s]}")
	completed=$(awk '/Queries completed:/ {print $3}' <<<"$out")
	rate=$(awk '/Queries per second:/ {print $4}' <<<"$out")
	mean=$(awk '/Average Latency/ {printf "%.1f", $4 * 1e6}' <<<"$out")
	qps[$s]+="$rate "
	lat[$s]+="$mean "
	cpu[$s]+="$(awk -v d=$((t1 - t0)) -v hz="$hz" -v n="$completed" 'BEGIN { printf "%.2f", n ? d / hz * 1e6 / n : 0 }') "
	printf "round %d  %-8s %10.0f qps  %8s µs mean latency  %6s µs CPU/query  (%s completed)\n" "$2" "$s" "$rate" \
		"$mean" "$(awk '{print $NF}' <<<"${cpu[$s]}")" "$completed"
}
median() { tr ' ' '\n' | grep -v '^$' | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

# runlat server round: dnsperf at a fixed rate well below saturation, so
# the latency measured is the server's, not the length of a queue.
declare -A llat
runlat() {
	local s=$1 out mean
	out=$(dnsperf -s 127.0.0.1 -p "${port[$s]}" -d "$work/queries.txt" -l "$LAT_DURATION" \
		-c "$CLIENTS" -T "$THREADS" -q "$OUTSTANDING" -Q "$LAT_QPS" 2>&1)
	mean=$(awk '/Average Latency/ {printf "%.1f", $4 * 1e6}' <<<"$out")
	llat[$s]+="$mean "
	printf "round %d  %-8s at %d qps: %8s µs mean latency\n" "$2" "$s" "$LAT_QPS" "$mean"
}

echo
echo "dnsperf: ${DURATION}s per run, ${REPS} rounds, -c $CLIENTS -T $THREADS -q $OUTSTANDING; $(nproc) CPUs;" \
	"server threads $SERVER_THREADS; $NAMES names, cache-hot"
echo "upstream nsd $("$NSD" -v 2>&1 | head -1) on :$nport; kudurru $("$KUDURRU" version 2>/dev/null | head -1) on :$kport;" \
	"unbound $("$UNBOUND" -V | awk '/^Version/ {print $2}') on :$uport; $("$KRESD" -V | head -1) on :$rport"
up0=$(kudurru_upstream_requests)
for r in $(seq "$REPS"); do
	for s in "${servers[@]}"; do run "$s" "$r"; done
done
if [ "$LAT_QPS" -gt 0 ]; then
	for r in $(seq "$REPS"); do
		for s in "${servers[@]}"; do runlat "$s" "$r"; done
	done
fi
echo "kudurru queries to the upstream while measuring: $(($(kudurru_upstream_requests) - up0)) (cache-hot)"

echo
printf "%-8s %12s %16s %14s %10s %10s %10s %18s %10s\n" server "median qps" "mean lat (µs)" "CPU µs/q" "qps/ub" "lat/ub" "cpu/ub" \
	"lat@${LAT_QPS}qps (µs)" "lat/ub"
uq=$(median <<<"${qps[unbound]}"); ul=$(median <<<"${lat[unbound]}"); uc=$(median <<<"${cpu[unbound]}")
ull=$(median <<<"${llat[unbound]:-0}")
for s in "${servers[@]}"; do
	q=$(median <<<"${qps[$s]}"); l=$(median <<<"${lat[$s]}"); c=$(median <<<"${cpu[$s]}")
	ll=$(median <<<"${llat[$s]:-0}")
	awk -v s="$s" -v q="$q" -v l="$l" -v c="$c" -v uq="$uq" -v ul="$ul" -v uc="$uc" -v ll="$ll" -v ull="$ull" 'BEGIN {
		printf "%-8s %12.0f %16.1f %14.2f %10.2f %10.2f %10.2f %18.1f %10.2f\n", s, q, l, c, q / uq, l / ul, (uc ? c / uc : 0),
			ll, (ull ? ll / ull : 0) }'
done
