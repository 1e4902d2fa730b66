#!/usr/bin/env bash
# Two "hosts" in network namespaces joined by a veth pair: rank 0 in one, rank 1 in the
# other, each with only its own loopback, so the store, the rendezvous and Gloo's all-reduce
# must cross the virtual network. Needs root and `ip netns`; otherwise it says why and
# reports "skipped" (exit 77). Usage: netns.sh DIST_WORKER
set -uo pipefail
worker=$1
a=tnA$$ b=tnB$$ net=10.$((RANDOM % 200 + 20)).$((RANDOM % 250)).
skip() { echo "SKIP: $*"; exit 77; }
TMPDIR_OUT=$(mktemp -d)
cleanup() { ip netns del "$a" 2>/dev/null; ip netns del "$b" 2>/dev/null; rm -rf "$TMPDIR_OUT"; }
trap cleanup EXIT

[[ $(id -u) -eq 0 ]] || skip "needs root to create network namespaces"
command -v ip >/dev/null || skip "no ip command (iproute2)"
ip netns add "$a" 2>/dev/null && ip netns add "$b" 2>/dev/null || skip "ip netns add is not permitted here"
ip link add "v$a" type veth peer name "v$b" 2>/dev/null || skip "cannot create a veth pair"
ip link set "v$a" netns "$a" && ip link set "v$b" netns "$b" || skip "cannot move veth ends into namespaces"
ip -n "$a" addr add "${net}1/24" dev "v$a" && ip -n "$b" addr add "${net}2/24" dev "v$b" || exit 1
for ns in "$a" "$b"; do ip -n "$ns" link set lo up; done
ip -n "$a" link set "v$a" up && ip -n "$b" link set "v$b" up || exit 1

port=$((20000 + RANDOM % 20000))  # a fresh namespace: nothing else listens there
run() {  # run NS RANK
  ip netns exec "$1" env MASTER_ADDR="${net}1" MASTER_PORT=$port WORLD_SIZE=2 RANK=$2 \
    timeout 120 "$worker" collectives --timeout 30
}
run "$a" 0 > "$TMPDIR_OUT/r0.log" 2>&1 &
p0=$!
run "$b" 1 > "$TMPDIR_OUT/r1.log" 2>&1 &
p1=$!
wait $p0; c0=$?
wait $p1; c1=$?
cat "$TMPDIR_OUT/r0.log" "$TMPDIR_OUT/r1.log"
[[ $c0 -eq 0 && $c1 -eq 0 ]] || { echo "FAIL: exit codes $c0 $c1"; exit 1; }
grep -q "collectives OK on rank 1 of 2" "$TMPDIR_OUT/r1.log" || { echo "FAIL: rank 1 did not finish"; exit 1; }
echo "OK: ranks in namespaces $a (${net}1) and $b (${net}2) ran the collectives across the veth link"
