#!/usr/bin/env bash
# bench-auth.sh: dnsperf against NSD and kudurru's resolver serving the same
# generated 10,000-record zone on loopback, side by side in one run.
#
# Each round runs dnsperf for DURATION seconds against NSD, then against
# kudurru; REPS rounds; the medians are reported. CPU per answered query is
# the server process tree's utime+stime (from /proc) over the run divided by
# the queries completed. Only 127.0.0.1 is used; every process started here
# is stopped on exit.
#
# Then REPS latency rounds send LAT_QPS queries a second for LAT_DURATION
# seconds to each, far below saturation, so that the mean latency measured
# is the server's own rather than time spent queued.
#
# Environment: DURATION (10), REPS (3), CLIENTS (dnsperf -c, 8),
# THREADS (dnsperf -T, 1), OUTSTANDING (dnsperf -q, 200), LAT_QPS (20000;
# 0 skips the latency rounds), LAT_DURATION (5), UDP_SOCKETS (kudurru's
# udp_sockets; default one per CPU).
set -euo pipefail

DURATION=${DURATION:-10}
REPS=${REPS:-3}
CLIENTS=${CLIENTS:-8}
THREADS=${THREADS:-1}
OUTSTANDING=${OUTSTANDING:-200}
LAT_QPS=${LAT_QPS:-20000}
LAT_DURATION=${LAT_DURATION:-5}

cd "$(dirname "$0")/.."
GO=${GO:-$(command -v go || echo /usr/local/go/bin/go)}
NSD=${NSD:-$(command -v nsd || echo /usr/sbin/nsd)}
command -v dnsperf >/dev/null || { echo "dnsperf not found: apt-get install dnsperf" >&2; exit 1; }
[ -x "$NSD" ] || { echo "nsd not found: apt-get install nsd" >&2; exit 1; }

work=$(mktemp -d)
kpid=""
npid=""
cleanup() {
	[ -n "$kpid" ] && kill "$kpid" 2>/dev/null && wait "$kpid" 2>/dev/null || true
	[ -n "$npid" ] && kill "$npid" 2>/dev/null && wait "$npid" 2>/dev/null || true
	rm -rf "$work"
}
trap cleanup EXIT

echo "building the resolver test binary..."
"$GO" test -c -o "$work/resolver.test" ./resolver

KUDURRU_BENCH_UDP_SOCKETS="${UDP_SOCKETS:-}" KUDURRU_BENCH_DIR="$work" "$work/resolver.test" -test.run '^TestServeForBench$' -test.timeout 0 \
	>"$work/kudurru.log" 2>&1 &
kpid=$!
for _ in $(seq 300); do
	[ -s "$work/kudurru.port" ] && break
	kill -0 "$kpid" 2>/dev/null || { cat "$work/kudurru.log"; exit 1; }
	sleep 0.1
done
[ -s "$work/kudurru.port" ] || { echo "kudurru did not start" >&2; cat "$work/kudurru.log"; exit 1; }
kport=$(cat "$work/kudurru.port")
nport=$(cat "$work/nsd.port")

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
	hide-version: yes
	rrl-ratelimit: 0
	rrl-whitelist-ratelimit: 0
	ipv4-edns-size: 1232
remote-control:
	control-enable: no
zone:
	name: "bench.test."
	zonefile: "$work/bench.test.zone"
CONF
"$NSD" -d -c "$work/nsd.conf" >"$work/nsd.out" 2>&1 &
npid=$!
for _ in $(seq 300); do
	grep -q "zone bench.test. serial" "$work/nsd.log" 2>/dev/null && break
	grep -q "nsd started" "$work/nsd.log" 2>/dev/null && break
	kill -0 "$npid" 2>/dev/null || { cat "$work/nsd.out" "$work/nsd.log"; exit 1; }
	sleep 0.1
done
sleep 0.5 # NSD reports start before its server child has loaded the zone

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
		}' /proc/[0-9]*/stat 2>/dev/null
}

hz=$(getconf CLK_TCK)
declare -A qps cpu
run() { # name pid port round
	local t0 t1 out completed rate
	t0=$(cpu_ticks "$2")
	out=$(dnsperf -s 127.0.0.1 -p "$3" -d "$work/queries.txt" -l "$DURATION" \
		-c "$CLIENTS" -T "$THREADS" -q "$OUTSTANDING" 2>&1)
	t1=$(cpu_ticks "$2")
	completed=$(awk '/Queries completed:/ {print $3}' <<<"$out")
	rate=$(awk '/Queries per second:/ {print $4}' <<<"$out")
	qps[$1]+="$rate "
	cpu[$1]+="$(awk -v d=$((t1 - t0)) -v hz="$hz" -v n="$completed" 'BEGIN { printf "%.2f", n ? d / hz * 1e6 / n : 0 }') "
	printf "round %d  %-8s %10.0f qps  %6s µs CPU/query  (%s completed)\n" "$4" "$1" "$rate" \
		"$(awk '{print $NF}' <<<"${cpu[$1]}")" "$completed"
}
median() { tr ' ' '\n' | grep -v '^$' | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
declare -A lat
runlat() { # name port round
	local out mean
	out=$(dnsperf -s 127.0.0.1 -p "$2" -d "$work/queries.txt" -l "$LAT_DURATION" \
		-c "$CLIENTS" -T "$THREADS" -q "$OUTSTANDING" -Q "$LAT_QPS" 2>&1)
	mean=$(awk '/Average Latency/ {printf "%.1f", $4 * 1e6}' <<<"$out")
	lat[$1]+="$mean "
	printf "round %d  %-8s at %d qps: %8s µs mean latency\n" "$3" "$1" "$LAT_QPS" "$mean"
}

echo "dnsperf: ${DURATION}s per run, ${REPS} rounds, -c $CLIENTS -T $THREADS -q $OUTSTANDING; $(nproc) CPUs"
echo "nsd $("$NSD" -v 2>&1 | head -1) on 127.0.0.1:$nport; kudurru on 127.0.0.1:$kport"
for r in $(seq "$REPS"); do
	run nsd "$npid" "$nport" "$r"
	run kudurru "$kpid" "$kport" "$r"
done
if [ "$LAT_QPS" -gt 0 ]; then
	for r in $(seq "$REPS"); do
		runlat nsd "$nport" "$r"
		runlat kudurru "$kport" "$r"
	done
fi
nq=$(median <<<"${qps[nsd]}"); kq=$(median <<<"${qps[kudurru]}")
nc=$(median <<<"${cpu[nsd]}"); kc=$(median <<<"${cpu[kudurru]}")
echo
printf "%-8s %12s %18s\n" server "median qps" "median µs CPU/q"
printf "%-8s %12.0f %18s\n" nsd "$nq" "$nc"
printf "%-8s %12.0f %18s\n" kudurru "$kq" "$kc"
awk -v k="$kq" -v n="$nq" 'BEGIN { printf "ratio kudurru/nsd qps: %.2f\n", k / n }'
awk -v k="$kc" -v n="$nc" 'BEGIN { printf "ratio kudurru/nsd CPU per query: %.2f\n", k / n }'
if [ "$LAT_QPS" -gt 0 ]; then
	nl=$(median <<<"${lat[nsd]}"); kl=$(median <<<"${lat[kudurru]}")
	printf "median mean latency at %d qps: nsd %s µs, kudurru %s µs\n" "$LAT_QPS" "$nl" "$kl"
	awk -v k="$kl" -v n="$nl" 'BEGIN { printf "ratio kudurru/nsd latency at a fixed rate: %.2f\n", k / n }'
fi
