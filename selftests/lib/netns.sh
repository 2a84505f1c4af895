# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# shellcheck shell=bash
#
# The netns test bed: two nodes in one guest.  Source it in a test that runs
# in a kfab-vm guest (it refuses to touch the host's network):
#
#	. selftests/lib/netns.sh
#	netns_up                        # kfabA and kfabB, joined by a veth pair
#	netns_exec b socat TCP-LISTEN:7000 EXEC:cat &
#	netns_exec a sh -c "echo hi | socat - TCP:$NETNS_B4:7000"
#	netns_cut; sleep 2; netns_restore
#	netns_down
#
# Addresses (the same as the two-guest bed's, tools/kfab-vm-pair):
#
#	namespace  interface  IPv4           IPv6
#	kfabA      kfab0      10.77.0.1/24   fd77::1/64
#	kfabB      kfab0      10.77.0.2/24   fd77::2/64
#
# Both namespaces have their loopback up; the IPv6 addresses are "nodad"
# (usable at once) and survive the link going down (keep_addr_on_down).
# A SIDE is a or b (A, B, kfabA and kfabB work too).
#
#	netns_up                  create both (after removing leftovers)
#	netns_down                kill what runs in them, delete both
#	netns_exec SIDE CMD...    run CMD in SIDE's namespace
#	netns_addr SIDE [4|6]     SIDE's address (default 4)
#	netns_pids SIDE           the processes in SIDE's namespace
#	netns_reachable SIDE [S]  wait up to S s (default 10) until SIDE pings
#	                          the other side on IPv4 and IPv6
#	netns_cut [SIDE]          link down (both ends, or SIDE's only: the
#	                          other end then sees no carrier); TCP does not
#	                          reset, its segments are dropped until restore
#	netns_restore             both ends up again; waits until reachable
#	netns_have_netem          true if tc netem is usable
#	netns_netem SIDE ARGS...  netem on SIDE's egress (e.g. delay 50ms,
#	                          loss 10%); replaces what was there
#	netns_netem_clear [SIDE]  remove netem (both sides by default)
#	netns_blackhole on|off    a silent outage: every frame lost both ways
#	                          (netem loss 100%), carrier and routes stay up
#	netns_outage S [cut|blackhole]
#	                          an outage of S seconds, then restore
#	netns_delete SIDE [--keep-procs]
#	                          delete SIDE's namespace with what runs in it:
#	                          SIGKILL its processes first, or with
#	                          --keep-procs only drop the name (the namespace
#	                          dies when its last process exits)
#
# Kernel consumers of kfab (kfab_blk) have their endpoints in the initial
# namespace (kfab_kep_open() binds there), so the bed can join it to one
# side as a third node, with a second veth pair:
#
#	namespace  interface  IPv4           IPv6
#	(initial)  kfabi      10.77.1.1/24   fd77:1::1/64
#	SIDE       kfab1      10.77.1.2/24   fd77:1::2/64
#
#	netns_init_up [SIDE]      the pair, to SIDE (default b), after
#	                          netns_up; waits until reachable
#	netns_init_down           delete it (netns_down does too)
#	netns_init_cut            its link down at both ends
#	netns_init_restore        up again; waits until reachable
#
# Every function returns non-zero on failure and says why on stderr.

NETNS_A=kfabA
NETNS_B=kfabB
NETNS_IF=kfab0
NETNS_A4=10.77.0.1
NETNS_B4=10.77.0.2
NETNS_A6=fd77::1
NETNS_B6=fd77::2
NETNS_PREFIX4=24
NETNS_PREFIX6=64
NETNS_INIT_IF=kfabi
NETNS_INIT_PEER_IF=kfab1
NETNS_INIT4=10.77.1.1
NETNS_INIT_PEER4=10.77.1.2
NETNS_INIT6=fd77:1::1
NETNS_INIT_PEER6=fd77:1::2
NETNS_INIT_SIDE=

netns_err() {
	echo "netns: $*" >&2
	return 1
}

netns_name() {	# netns_name SIDE: kfabA or kfabB
	case $1 in
	a | A | kfabA) echo $NETNS_A ;;
	b | B | kfabB) echo $NETNS_B ;;
	*) netns_err "no side '$1' (a or b)" ;;
	esac
}

netns_other() {	# netns_other SIDE: the other side's letter
	case $(netns_name "$1") in
	"$NETNS_A") echo b ;;
	"$NETNS_B") echo a ;;
	*) return 1 ;;
	esac
}

netns_addr() {	# netns_addr SIDE [4|6]
	local ns
	ns=$(netns_name "$1") || return
	case $ns/${2:-4} in
	"$NETNS_A"/4) echo $NETNS_A4 ;;
	"$NETNS_B"/4) echo $NETNS_B4 ;;
	"$NETNS_A"/6) echo $NETNS_A6 ;;
	"$NETNS_B"/6) echo $NETNS_B6 ;;
	*) netns_err "no address family '$2' (4 or 6)" ;;
	esac
}

netns_exec() {	# netns_exec SIDE CMD...
	local ns
	ns=$(netns_name "$1") || return
	shift
	ip netns exec "$ns" "$@"
}

netns_pids() {	# netns_pids SIDE
	local ns
	ns=$(netns_name "$1") || return
	ip netns pids "$ns" 2>/dev/null
}

# Kill everything in a namespace and wait (5 s at most) until it is gone.
netns_kill() {	# netns_kill NAMESPACE
	local pids _
	for _ in $(seq 50); do
		pids=$(ip netns pids "$1" 2>/dev/null)
		[ -z "$pids" ] && return 0
		# shellcheck disable=SC2086
		kill -9 $pids 2>/dev/null
		sleep 0.1
	done
	netns_err "processes in $1 survive SIGKILL: $pids"
}

netns_guard() {
	[ "$(id -u)" -eq 0 ] || netns_err "needs root" || return
	# Never change the network of the machine the tests run on.
	[ "${KFAB_VM:-}" = 1 ] || [ "${NETNS_BED_FORCE:-}" = 1 ] ||
		netns_err "runs in a kfab-vm guest only (NETNS_BED_FORCE=1 overrides)"
}

NETNS_HAVE_NETEM=

netns_have_netem() {
	if [ -z "$NETNS_HAVE_NETEM" ]; then
		NETNS_HAVE_NETEM=0
		# Loaded by hand: the guest does not autoload modules.
		modprobe -q sch_netem 2>/dev/null
		if netns_exec a tc qdisc replace dev $NETNS_IF root netem \
			delay 0ms 2>/dev/null; then
			NETNS_HAVE_NETEM=1
			netns_exec a tc qdisc del dev $NETNS_IF root 2>/dev/null
		fi
	fi
	[ "$NETNS_HAVE_NETEM" = 1 ]
}

netns_up() {
	netns_guard || return
	netns_down 2>/dev/null
	modprobe -q veth 2>/dev/null	# built in on the debug kernel
	ip netns add $NETNS_A || return
	ip netns add $NETNS_B || return
	# The same interface name on both sides, created in place.
	ip link add name $NETNS_IF netns $NETNS_A type veth \
		peer name $NETNS_IF netns $NETNS_B ||
		netns_err "cannot create the veth pair (veth not loaded?)" ||
		return
	local side ns
	for side in a b; do
		ns=$(netns_name $side)
		ip netns exec "$ns" sh -c "
			sysctl -qw net.ipv6.conf.all.disable_ipv6=0 &&
			sysctl -qw net.ipv6.conf.default.keep_addr_on_down=1 &&
			sysctl -qw net.ipv6.conf.$NETNS_IF.keep_addr_on_down=1 &&
			sysctl -qw net.ipv6.conf.$NETNS_IF.accept_dad=0" ||
			return
		ip -n "$ns" link set lo up &&
		ip -n "$ns" addr add "$(netns_addr $side 4)/$NETNS_PREFIX4" \
			dev $NETNS_IF &&
		ip -n "$ns" addr add "$(netns_addr $side 6)/$NETNS_PREFIX6" \
			dev $NETNS_IF nodad &&
		ip -n "$ns" link set $NETNS_IF up || return
	done
	NETNS_HAVE_NETEM=
	netns_reachable a 10
}

netns_down() {
	local ns rc=0
	for ns in $NETNS_A $NETNS_B; do
		ip netns list | grep -qw "^$ns" || continue
		netns_kill "$ns" || rc=1
		ip netns del "$ns" || rc=1
	done
	return $rc
}

netns_reachable() {	# netns_reachable SIDE [SECONDS]
	local other _
	other=$(netns_other "$1") || return
	for _ in $(seq $((${2:-10} * 5))); do
		if netns_exec "$1" ping -q -c 1 -W 1 "$(netns_addr "$other" 4)" \
			>/dev/null 2>&1 &&
		   netns_exec "$1" ping -q -c 1 -W 1 "$(netns_addr "$other" 6)" \
			>/dev/null 2>&1; then
			return 0
		fi
		sleep 0.2
	done
	netns_err "$(netns_name "$1") cannot reach $(netns_name "$other")"
}

netns_cut() {	# netns_cut [SIDE]
	local side
	for side in ${1:-a b}; do
		netns_exec "$side" ip link set $NETNS_IF down || return
	done
}

netns_restore() {
	netns_exec a ip link set $NETNS_IF up &&
	netns_exec b ip link set $NETNS_IF up &&
	netns_reachable a 10
}

netns_netem() {	# netns_netem SIDE ARGS...
	local side=$1
	shift
	netns_have_netem || netns_err "no netem in this kernel" || return
	netns_exec "$side" tc qdisc replace dev $NETNS_IF root netem "$@"
}

netns_netem_clear() {	# netns_netem_clear [SIDE]
	local side
	for side in ${1:-a b}; do
		# Nothing there is fine.
		netns_exec "$side" tc qdisc del dev $NETNS_IF root 2>/dev/null
	done
	return 0
}

netns_blackhole() {	# netns_blackhole on|off
	case $1 in
	on) netns_netem a loss 100% && netns_netem b loss 100% ;;
	off) netns_netem_clear ;;
	*) netns_err "netns_blackhole on|off" ;;
	esac
}

netns_outage() {	# netns_outage SECONDS [cut|blackhole]
	case ${2:-cut} in
	cut) netns_cut && sleep "$1" && netns_restore ;;
	blackhole) netns_blackhole on && sleep "$1" && netns_blackhole off ;;
	*) netns_err "netns_outage SECONDS [cut|blackhole]" ;;
	esac
}

netns_delete() {	# netns_delete SIDE [--keep-procs]
	local ns
	ns=$(netns_name "$1") || return
	if [ "${2:-}" != --keep-procs ]; then
		netns_kill "$ns" || return
	fi
	ip netns del "$ns"
}

# ---- the initial namespace as a third node ----

netns_init_reachable() {	# netns_init_reachable [SECONDS]
	local _
	for _ in $(seq $((${1:-10} * 5))); do
		if ping -q -c 1 -W 1 $NETNS_INIT_PEER4 >/dev/null 2>&1 &&
		   ping -q -c 1 -W 1 $NETNS_INIT_PEER6 >/dev/null 2>&1; then
			return 0
		fi
		sleep 0.2
	done
	netns_err "the initial namespace cannot reach $NETNS_INIT_PEER4"
}

netns_init_up() {	# netns_init_up [SIDE]
	local ns
	netns_guard || return
	ns=$(netns_name "${1:-b}") || return
	netns_init_down 2>/dev/null
	ip link add name $NETNS_INIT_IF type veth \
		peer name $NETNS_INIT_PEER_IF netns "$ns" ||
		netns_err "cannot create the veth pair (veth not loaded?)" ||
		return
	NETNS_INIT_SIDE=${1:-b}
	sysctl -qw net.ipv6.conf.$NETNS_INIT_IF.disable_ipv6=0 &&
	sysctl -qw net.ipv6.conf.$NETNS_INIT_IF.keep_addr_on_down=1 &&
	sysctl -qw net.ipv6.conf.$NETNS_INIT_IF.accept_dad=0 &&
	ip netns exec "$ns" sh -c "
		sysctl -qw net.ipv6.conf.$NETNS_INIT_PEER_IF.keep_addr_on_down=1 &&
		sysctl -qw net.ipv6.conf.$NETNS_INIT_PEER_IF.accept_dad=0" &&
	ip addr add $NETNS_INIT4/$NETNS_PREFIX4 dev $NETNS_INIT_IF &&
	ip addr add $NETNS_INIT6/$NETNS_PREFIX6 dev $NETNS_INIT_IF nodad &&
	ip -n "$ns" addr add $NETNS_INIT_PEER4/$NETNS_PREFIX4 \
		dev $NETNS_INIT_PEER_IF &&
	ip -n "$ns" addr add $NETNS_INIT_PEER6/$NETNS_PREFIX6 \
		dev $NETNS_INIT_PEER_IF nodad &&
	ip link set $NETNS_INIT_IF up &&
	ip -n "$ns" link set $NETNS_INIT_PEER_IF up || return
	netns_init_reachable 10
}

netns_init_down() {
	netns_guard || return
	ip link show $NETNS_INIT_IF >/dev/null 2>&1 || return 0
	ip link del $NETNS_INIT_IF
}

netns_init_cut() {
	netns_guard || return
	ip link set $NETNS_INIT_IF down &&
	netns_exec "${NETNS_INIT_SIDE:-b}" ip link set $NETNS_INIT_PEER_IF down
}

netns_init_restore() {
	netns_guard || return
	ip link set $NETNS_INIT_IF up &&
	netns_exec "${NETNS_INIT_SIDE:-b}" ip link set $NETNS_INIT_PEER_IF up &&
	netns_init_reachable 10
}
