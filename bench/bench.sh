#!/bin/sh
# bench/bench.sh BIN TRACE N: `make bench` (issue 34 item 1). Replays TRACE
# under each config of this directory N times and prints, per replay, the
# simulated output tokens, the median CPU time of the process (user + sys,
# /usr/bin/time), simulated output tokens per CPU-second and the CPU time
# as a multiple of the plain (headline) replay's. The runs of the configs
# are interleaved, so a busy machine slows them alike.
set -e
bin=$1 trace=$2 n=${3:-3}
dir=$(dirname "$0")
configs="headline default kv_router disagg tiers planner"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
i=0
while [ $i -lt "$n" ]; do
	i=$((i + 1))
	for c in $configs; do
		/usr/bin/time -f "%U %S" -o "$tmp/$c.time" "$bin" predict -c "$dir/$c.yaml" --trace "$trace" --format json --stats 2>"$tmp/$c.stats" >/dev/null
		awk '{print $1 + $2}' "$tmp/$c.time" >>"$tmp/$c.cpu"
	done
done
median() { sort -n "$1" | awk '{a[NR] = $1} END {print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2}'; }
base=$(median "$tmp/headline.cpu")
printf '%-10s %14s %10s %16s %14s\n' replay output_tokens cpu_s M_tok_per_cpu_s cpu_vs_plain
for c in $configs; do
	cpu=$(median "$tmp/$c.cpu")
	tok=$(sed -n 's/.* \([0-9][0-9]*\) output tokens simulated.*/\1/p' "$tmp/$c.stats")
	awk -v c="$c" -v t="$tok" -v s="$cpu" -v b="$base" 'BEGIN {printf "%-10s %14d %10.3f %16.2f %13.2fx\n", c, t, s, t / s / 1e6, s / b}'
done
echo "(median of $n interleaved runs each; $(uptime | sed 's/.*load/load/'))"
