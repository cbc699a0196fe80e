#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# timeout: 900
#
# kiwi's connection management as a user sees it: the MPA policy knobs
# (per-device sysfs files; mpa_crc, mpa_fpdu_max and the TCP liveness ones
# also module parameters, the per-peer mpa_rev, mpa_p2p, mpa_rtr and
# mpa_markers not), listeners on a specific
# address, on the wildcard and on IPv6, in the netdev's network namespace;
# the MPA Reply bytes a plain TCP peer gets (accept, and each refusal the
# RFCs define), the MPA Request kiwi sends, connect timeout, reject and
# refused connections through rdma_cm (rping), kiwi to kiwi traffic, and
# `rdma link del' while listening, mid-handshake and connected, with the
# object counts back to zero.
. "$(dirname "$0")/lib/lib.sh"

sysib=/sys/class/infiniband
params=/sys/module/kiwi/parameters
tmp=$(mktemp -d)
mpa=$tmp/mpa.py
PEER="ip netns exec peer"

# A hand-made MPA peer over a plain TCP socket: sends a Request and prints
# the Reply's fields (client), or accepts, prints the Request and answers
# as told (server).
cat > "$mpa" <<'PY'
import socket, struct, sys, time, argparse

KEY_REQ = b"MPA ID Req Frame"
KEY_REP = b"MPA ID Rep Frame"
RTR = {"none": (0, 0), "send": (0x4000, 0), "write": (0, 0x8000), "read": (0, 0x4000)}

def frame(key, rev, m, c, r, h, v2, p2p, rtr, ird, ord_, pd, pdlen=None):
    bits = rev | (0x8000 if m else 0) | (0x4000 if c else 0) | (0x2000 if r else 0) | (0x1000 if h else 0)
    body = b""
    if v2:
        i = ird & 0x3fff
        o = ord_ & 0x3fff
        if p2p:
            i |= 0x8000
            ri, ro = RTR[rtr]
            i |= ri
            o |= ro
        body = struct.pack(">HH", i, o)
    body += pd
    n = len(body) if pdlen is None else pdlen
    return key + struct.pack(">HH", bits, n) + body

def recvn(s, n):
    b = b""
    while len(b) < n:
        x = s.recv(n - len(b))
        if not x:
            return None
        b += x
    return b

def show(kind, hdr, pd):
    bits, n = struct.unpack(">HH", hdr[16:20])
    out = "%s key=%s rev=%d m=%d c=%d r=%d h=%d pdlen=%d" % (
        kind, "ok" if hdr[:16] in (KEY_REQ, KEY_REP) else "bad", bits & 0xff,
        bits >> 15 & 1, bits >> 14 & 1, bits >> 13 & 1, bits >> 12 & 1, n)
    ulp = pd
    if bits & 0x1000 and (bits & 0xff) == 2 and len(pd) >= 4:
        i, o = struct.unpack(">HH", pd[:4])
        rtr = [k for k, v in (("send", i & 0x4000), ("write", o & 0x8000), ("read", o & 0x4000)) if v]
        out += " p2p=%d rtr=%s ird=%d ord=%d" % (i >> 15, ",".join(rtr) or "none", i & 0x3fff, o & 0x3fff)
        ulp = pd[4:]
    out += " ulp=%r ulphex=%s" % (ulp.decode("latin1"), ulp.hex())
    print(out, flush=True)

def read_frame(s, kind):
    try:
        return read_frame1(s, kind)
    except ConnectionResetError:
        print("reset", flush=True)
    except socket.timeout:
        print("timeout", flush=True)
    return None

def read_frame1(s, kind):
    hdr = recvn(s, 20)
    if hdr is None:
        print("eof", flush=True)
        return None
    n = struct.unpack(">H", hdr[18:20])[0]
    pd = recvn(s, n) if n else b""
    if pd is None:
        print("eof", flush=True)
        return None
    show(kind, hdr, pd)
    return hdr, pd

def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("mode")
    ap.add_argument("addr")
    ap.add_argument("port", type=int)
    ap.add_argument("--key", default="good")
    ap.add_argument("--rev", type=int, default=2)
    ap.add_argument("--crc", type=int, default=0)
    ap.add_argument("--markers", type=int, default=0)
    ap.add_argument("--noh", action="store_true")
    ap.add_argument("--p2p", type=int, default=1)
    ap.add_argument("--rtr", default="write")
    ap.add_argument("--ird", type=int, default=8)
    ap.add_argument("--ord", type=int, default=8)
    ap.add_argument("--pd", default="hello")
    ap.add_argument("--pdlen", type=int)
    ap.add_argument("--pdpat", type=int, help="private data: N bytes of cm-reject's pattern")
    ap.add_argument("--reply", default="accept")
    ap.add_argument("--hold", type=float, default=0.5)
    ap.add_argument("--timeout", type=float, default=20)
    ap.add_argument("--send", default="all")
    ap.add_argument("--expect-term", action="store_true")
    a = ap.parse_args()
    fam = socket.AF_INET6 if ":" in a.addr else socket.AF_INET
    v2 = a.rev == 2 and not a.noh
    pd = a.pd.encode() if a.pdpat is None else bytes((i * 7 + 3) & 255 for i in range(a.pdpat))
    if a.mode == "client":
        s = socket.create_connection((a.addr, a.port), timeout=a.timeout)
        key = KEY_REQ if a.key == "good" else (KEY_REP if a.key == "rep" else b"MPA ID Bad Frame")
        f = frame(key, a.rev, a.markers, a.crc, 0, v2, v2, a.p2p, a.rtr, a.ird, a.ord, pd, a.pdlen)
        if a.send == "header":
            f = f[:20]
        if a.send != "none":
            s.sendall(f)
        t = time.time()
        read_frame(s, "reply")
        print("elapsed %.1f" % (time.time() - t), flush=True)
        time.sleep(a.hold)
        s.close()
    else:
        ls = socket.socket(fam, socket.SOCK_STREAM)
        ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        ls.bind((a.addr, a.port))
        ls.listen(4)
        print("listening", flush=True)
        ls.settimeout(a.timeout)
        s, _ = ls.accept()
        s.settimeout(a.timeout)
        t = time.time()
        got = read_frame(s, "request")
        if got and a.reply == "silent":
            try:
                x = s.recv(1)
                print("peer closed after %.1f" % (time.time() - t) if not x else "data", flush=True)
            except ConnectionResetError:
                print("peer reset after %.1f" % (time.time() - t), flush=True)
        elif got:
            r = a.reply == "reject"
            s.sendall(frame(KEY_REP, a.rev, 0, a.crc, r, v2, v2, a.p2p, a.rtr, a.ird, a.ord, pd))
            if a.expect_term:
                # the first FPDU after our Reply: its MPA length says how long
                b = recvn(s, 2)
                if b:
                    b += recvn(s, struct.unpack(">H", b)[0]) or b""
                print("term " + (b or b"").hex(), flush=True)
            time.sleep(a.hold)
        s.close()

main()
PY

cleanup() {
	kill $(jobs -p) 2>/dev/null
	wait 2>/dev/null
	rdma link del kiwi0 2>/dev/null
	rdma link del kiwi1 2>/dev/null
	$PEER rdma link del kiwi1 2>/dev/null
	rdma link del siw0 2>/dev/null
	$PEER rdma link del siw1 2>/dev/null
	siw_unload 2>/dev/null
	ip netns del peer 2>/dev/null
	veth_teardown
	rm -rf "$tmp"
}
trap cleanup EXIT

ceps_are() {
	local c
	c=$(kiwi_count ceps)
	[ "$c" = "$1" ] || { echo "ceps: ${c:-none} (want $1)"; return 1; }
}
# every count but the devices' is zero: connections and their objects gone
conn_counts_zero() {
	local name count bad=0
	while read -r name count _; do
		[ "$name" = devices ] && continue
		[ "$count" = 0 ] || { echo "$name = $count"; bad=1; }
	done < "$KIWI_OBJECTS"
	return $bad
}
conn_zero_after() {
	if wait_for 15 conn_counts_zero; then
		tap_ok "no cep, QP or other object left $1"
	else
		tap_fail "no cep, QP or other object left $1"
		tap_diag "$(cat "$KIWI_OBJECTS" 2>&1)"
	fi
}
counts_zero_after() {
	if wait_for 15 kiwi_counts_zero; then
		tap_ok "object counts are zero $1"
	else
		tap_fail "object counts are zero $1"
		tap_diag "$(cat "$KIWI_OBJECTS" 2>&1)"
	fi
}
# listening NS ADDR:PORT: a TCP listener on exactly that address ("-" = default
# ns), bound to a device or not (a wildcard listener's sockets are: ss shows
# 198.18.0.1%veth0:7001)
listening() {
	local ns=$1 ap=$2
	if [ "$ns" = - ]; then
		ss -Hltn "( sport = :${ap##*:} )"
	else
		ip netns exec "$ns" ss -Hltn "( sport = :${ap##*:} )"
	fi | awk '{ a = $4; sub(/%[^%]*:/, ":", a); print a }' | grep -qxF "$ap"
}
not_listening_port() {
	local ns=$1 port=$2
	if [ "$ns" = - ]; then
		! ss -Hltn "( sport = :$port )" | grep -q .
	else
		! ip netns exec "$ns" ss -Hltn "( sport = :$port )" | grep -q .
	fi
}
# expect FILE REGEX DESC: tap on a captured output
expect() {
	if grep -qE -- "$2" "$1"; then
		tap_ok "$3"
	else
		tap_fail "$3"
		tap_diag "wanted /$2/ in:" "$(head -n 30 "$1")"
	fi
}
rping_server() {	# NS ADDR PORT LOG [args]
	local ns=$1 addr=$2 port=$3 log=$4
	shift 4
	if [ "$ns" = - ]; then
		rping -s -a "$addr" -p "$port" "$@" > "$log" 2>&1 &
	else
		ip netns exec "$ns" rping -s -a "$addr" -p "$port" "$@" > "$log" 2>&1 &
	fi
}
mpa_server_ready() { grep -q listening "$1"; }
# rping_ms PORT: the ms one rping client takes to connect to 198.18.0.2:PORT,
# ping once with its data checked and disconnect (stdout)
rping_ms() {
	local t0 t1
	t0=$(date +%s%N)
	timeout 30 rping -c -a 198.18.0.2 -p "$1" -C 1 -V > /dev/null 2>&1 ||
		return 1
	t1=$(date +%s%N)
	echo $(((t1 - t0) / 1000000))
}
# median: of the numbers on stdin, one a line
median() {
	sort -n | awk '{ a[NR] = $1 } END { if (NR) print a[int((NR + 1) / 2)] }'
}
# reap PID [SECONDS]: wait for a background process to end, kill it if it
# does not within SECONDS (default 10)
reap() {
	wait_for "${2:-10}" sh -c "! kill -0 $1 2>/dev/null" > /dev/null 2>&1 ||
		kill "$1" 2>/dev/null
	wait "$1" 2>/dev/null
}

kiwi_load || { tap_fail "kiwi loads"; tap_done; }
kiwi_provider_env
tap_check "veth pair is up" veth_setup
tap_check "kiwi0 on veth0, kiwi1 on veth1" \
	sh -c 'rdma link add kiwi0 type kiwi netdev veth0 &&
	       rdma link add kiwi1 type kiwi netdev veth1'

# --- policy: module parameters and per-device sysfs ---------------------
# knobs that are module parameters too; those a user sets per peer are not
pol_params="mpa_crc mpa_fpdu_max tcp_user_timeout_ms tcp_keepalive_s"
pol_peer="mpa_rev mpa_p2p mpa_rtr mpa_markers"
pol_defaults() {
	local f k want got bad=0
	for f in mpa_crc=off mpa_rev=2 mpa_p2p=1 mpa_rtr=write mpa_markers=0 \
		 mpa_fpdu_max=65535 tcp_user_timeout_ms=30000 tcp_keepalive_s=30; do
		k=${f%%=*}
		want=${f#*=}
		if [[ " $pol_peer " == *" $k "* ]]; then
			[ ! -e "$params/$k" ] ||
				{ echo "$k is a module parameter"; bad=1; }
		else
			got=$(cat "$params/$k") || bad=1
			[ "$got" = "$want" ] || { echo "param $k: $got"; bad=1; }
		fi
		got=$(cat "$sysib/kiwi0/$k") || bad=1
		[ "$got" = "$want" ] || { echo "kiwi0 $k: $got"; bad=1; }
	done
	[ "$(cat $params/connect_timeout_ms)" = 60000 ] || { echo timeout; bad=1; }
	return $bad
}
tap_check "policy defaults: module parameters (none for $pol_peer) and kiwi0's sysfs files" pol_defaults

# the module's parameters: at most those of issue 41's list (tx_zcopy
# until zero-copy transmit is the only way)
all_params="$pol_params connect_timeout_ms pending_per_listener
	pending_per_source port_map"
params_few() {
	local p bad=0
	for p in $(ls $params); do
		case " $(echo $all_params) tx_zcopy " in
		*" $p "*) ;;
		*) echo "unexpected module parameter $p"; bad=1 ;;
		esac
	done
	return $bad
}
tap_check "module parameters: none but $(echo $all_params) (and tx_zcopy)" \
	params_few

# bad values fail with EINVAL (numbers out of range: ERANGE), change nothing
pol_bad() {
	local f v e bad=0
	for f in mpa_crc:on mpa_crc:2 mpa_rev:0 mpa_rev:3 mpa_p2p:2 mpa_p2p:yes \
		 mpa_rtr:none mpa_rtr:wr mpa_markers:-1 mpa_markers: \
		 tcp_user_timeout_ms:abc tcp_keepalive_s:-1 \
		 tcp_user_timeout_ms:600001:range tcp_keepalive_s:32768:range; do
		v=${f#*:}
		e="Invalid argument"
		case $v in *:range) v=${v%:range}; e="out of range" ;; esac
		for d in "$params" "$sysib/kiwi1"; do
			[ "$d" = "$params" ] &&
				[[ " $pol_peer " == *" ${f%%:*} "* ]] && continue
			if echo "$v" > "$d/${f%%:*}" 2>"$tmp/err"; then
				echo "$d/${f%%:*} took '$v'"; bad=1
			elif ! grep -q "$e" "$tmp/err"; then
				echo "$d/${f%%:*} '$v': $(cat "$tmp/err")"; bad=1
			fi
		done
	done
	for v in 0 600001 abc -5; do
		if echo "$v" > $params/connect_timeout_ms 2>/dev/null; then
			echo "connect_timeout_ms took $v"; bad=1
		fi
	done
	pol_defaults || bad=1
	return $bad
}
tap_check "bad policy values are refused with EINVAL or ERANGE, nothing changes" pol_bad

pol_set() {
	echo required > $sysib/kiwi1/mpa_crc && echo read > $sysib/kiwi1/mpa_rtr &&
	[ "$(cat $sysib/kiwi1/mpa_crc)" = required ] &&
	[ "$(cat $sysib/kiwi1/mpa_rtr)" = read ] &&
	[ "$(cat $sysib/kiwi0/mpa_crc)" = off ] &&
	[ "$(cat $params/mpa_crc)" = off ] &&
	echo off > $sysib/kiwi1/mpa_crc && echo write > $sysib/kiwi1/mpa_rtr &&
	echo preferred > $params/mpa_crc && [ "$(cat $params/mpa_crc)" = preferred ] &&
	[ "$(cat $sysib/kiwi0/mpa_crc)" = off ] && echo off > $params/mpa_crc
}
tap_check "a device's policy is its own; parameters are defaults for new devices" pol_set

# --- wildcard listener over two devices in one namespace ----------------
rping_server - 0.0.0.0 7001 $tmp/wild.log
spid=$!
wild_up() { listening - 198.18.0.1:7001 && listening - 198.18.0.2:7001; }
if wait_for 10 wild_up; then
	tap_ok "wildcard listen: one socket per device address (198.18.0.1 and .2, same port)"
else
	tap_fail "wildcard listen: one socket per device address (198.18.0.1 and .2, same port)"
	tap_diag "$(ss -ltn)" "$(cat $tmp/wild.log)"
fi
tap_check "a listener counts as a cep per device" ceps_are 2
ip addr add 198.18.0.3/24 dev veth1
if wait_for 60 listening - 198.18.0.3:7001; then
	tap_ok "an address added to veth1 later is listened on too"
else
	tap_fail "an address added to veth1 later is listened on too"
	tap_diag "$(ss -ltn)"
fi
python3 "$mpa" client 198.18.0.2 7001 --hold 1 > $tmp/c.log 2>&1
expect $tmp/c.log "^reply key=ok rev=2 m=0 c=0 r=0 h=1 pdlen=4 p2p=1 rtr=write ird=[0-9]+ ord=8 " \
	"wildcard listener on kiwi1 accepts: Reply rev 2, enhanced, p2p Write RTR, ORD cut to our IRD 8"
reap $spid
wait_for 10 not_listening_port - 7001 &&
	tap_ok "listener sockets closed when rping exits" ||
	tap_fail "listener sockets closed when rping exits"
conn_zero_after "after the wildcard listener and its connection"

# --- kiwi to kiwi, then rdma link del while connected -------------------
rping_server - 198.18.0.2 7006 $tmp/s6.log -C 4 -v
spid=$!
wait_for 60 listening - 198.18.0.2:7006
timeout 60 rping -c -a 198.18.0.2 -p 7006 -C 4 -v > $tmp/c6.log 2>&1
rc=$?
reap $spid
if [ $rc = 0 ] && grep -q "rdma-ping-3" $tmp/c6.log &&
   grep -q "rdma-ping-3" $tmp/s6.log; then
	tap_ok "kiwi0 to kiwi1: rping 4 round trips, both sides see the data"
else
	tap_fail "kiwi0 to kiwi1: rping 4 round trips, both sides see the data"
	tap_diag "client rc $rc" "$(tail -5 $tmp/c6.log)" "$(tail -5 $tmp/s6.log)"
fi
conn_zero_after "after a kiwi to kiwi rping"

rping_server - 198.18.0.2 7007 $tmp/s7.log -P
spid=$!
wait_for 60 listening - 198.18.0.2:7007
rping -c -a 198.18.0.2 -p 7007 > $tmp/c7.log 2>&1 &
cpid=$!
# the listener, the client's connection and the accepted one
if wait_for 20 ceps_are 3 && sleep 1 && ceps_are 3; then
	tap_ok "a looping kiwi to kiwi rping is up: 3 ceps"
else
	tap_fail "a looping kiwi to kiwi rping is up: 3 ceps"
	tap_diag "$(tail -5 $tmp/c7.log)"
fi
start=$SECONDS
rdma link del kiwi1 > $tmp/del.log 2>&1
rc=$?
took=$((SECONDS - start))
reap $cpid 20
reap $spid
if [ $rc = 0 ] && [ $took -le 15 ] && ! kill -0 $cpid 2>/dev/null; then
	tap_ok "rdma link del of a connected and listening device (${took}s), the client's rping ends"
else
	tap_fail "rdma link del of a connected and listening device"
	tap_diag "rc $rc took $took" "$(cat $tmp/del.log)" "$(tail -3 $tmp/c7.log)"
fi
tap_check "the connection's listener socket is gone" not_listening_port - 7007
rdma link del kiwi0
counts_zero_after "after removing a connected device"

# --- a device in another namespace: sockets live there ------------------
ip netns add peer
ip link set veth1 netns peer
$PEER ip addr add 198.18.0.2/24 dev veth1
$PEER ip addr add fd00::2/64 dev veth1 nodad
$PEER ip link set veth1 up
$PEER ip link set lo up
ip addr add fd00::1/64 dev veth0 nodad
tap_check "kiwi0 on veth0, kiwi1 on veth1 in netns peer" \
	sh -c 'rdma link add kiwi0 type kiwi netdev veth0 &&
	       ip netns exec peer rdma link add kiwi1 type kiwi netdev veth1'
echo 2000 > $params/connect_timeout_ms

rping_server peer 198.18.0.2 7002 $tmp/s2.log -d
spid=$!
if wait_for 60 listening peer 198.18.0.2:7002 && not_listening_port - 7002; then
	tap_ok "kiwi1's listener socket is in kiwi1's netdev's namespace"
else
	tap_fail "kiwi1's listener socket is in kiwi1's netdev's namespace"
fi

# refusals before the consumer hears of the connection (RFC 5044 7.1,
# RFC 6581): no Reply for a malformed Request, a Reply with R otherwise
refuse() {	# DESC REGEX ARGS...
	local desc=$1 re=$2
	shift 2
	python3 "$mpa" client 198.18.0.2 7002 "$@" > $tmp/r.log 2>&1
	expect $tmp/r.log "$re" "$desc"
}
refuse "bad key: closed, no Reply" "^(eof|reset)" --key bad
refuse "a Reply's key in a Request: closed, no Reply" "^(eof|reset)" --key rep
refuse "private data length 600 > 512: closed, no Reply" "^(eof|reset)" --pdlen 600
refuse "revision 3: Reply with R, revision 2" "^reply key=ok rev=2 m=0 c=0 r=1 " --rev 3
refuse "revision 0: Reply with R" "^reply key=ok rev=2 .* r=1 " --rev 0
refuse "peer-to-peer with no RTR type: Reply with R" \
	"^reply key=ok rev=2 m=0 c=0 r=1 h=1 .*p2p=1 rtr=none" --rtr none
echo required > $sysib/kiwi1/mpa_crc
refuse "mpa_crc=required, Request without C: Reply with R and C" \
	"^reply key=ok rev=2 m=0 c=1 r=1 " --crc 0
echo off > $sysib/kiwi1/mpa_crc
echo 0 > $sysib/kiwi1/mpa_p2p
refuse "mpa_p2p=0 and a peer-to-peer Request: Reply without RTR (the initiator decides)" \
	"^reply key=ok rev=2 m=0 c=0 r=0 h=1 pdlen=4 p2p=0 rtr=none" --hold 0.2
echo 1 > $sysib/kiwi1/mpa_p2p
reap $spid

rping_server peer 198.18.0.2 7002 $tmp/s2.log
spid=$!
wait_for 60 listening peer 198.18.0.2:7002
refuse "no Request within connect_timeout_ms (2 s): closed" "^(eof|reset)" --send none
expect $tmp/r.log "^elapsed (1\.[5-9]|2\.|3\.)" "... after about 2 s"
refuse "half a Request: closed at the timeout" "^(eof|reset)" --send header
tap_check "refused connections leave only the listener" ceps_are 1
refuse "revision 1 Request: accepted with a revision 1 Reply, no IRD/ORD" \
	"^reply key=ok rev=1 m=0 c=0 r=0 h=0 pdlen=0 ulp=''" --rev 1 --hold 1
reap $spid

rping_server peer 198.18.0.2 7002 $tmp/s2.log
spid=$!
wait_for 60 listening peer 198.18.0.2:7002
echo read > $sysib/kiwi1/mpa_rtr
refuse "CRC asked by the peer is used; mpa_rtr=read is picked when offered" \
	"^reply key=ok rev=2 m=0 c=1 r=0 h=1 pdlen=4 p2p=1 rtr=read ird=[0-9]+ ord=3 " \
	--crc 1 --rtr read --ird 3 --hold 1
echo write > $sysib/kiwi1/mpa_rtr
reap $spid
conn_zero_after "after the passive-side checks"

# --- the active side against hand-made peers ----------------------------
mpa_peer() {	# PORT LOG ARGS...: a python MPA responder in netns peer
	local port=$1 log=$2
	shift 2
	$PEER python3 "$mpa" server 198.18.0.2 "$port" "$@" > "$log" 2>&1 &
	ppid_=$!
	wait_for 15 mpa_server_ready "$log"
}
mpa_peer 7003 $tmp/p3.log --reply silent
start=$(date +%s.%N)
rping -c -a 198.18.0.2 -p 7003 -C 1 -d > $tmp/c3.log 2>&1
rc=$?
took=$(echo "$(date +%s.%N) - $start" | bc)
reap $ppid_
expect $tmp/p3.log "^request key=ok rev=2 m=0 c=0 r=0 h=1 pdlen=4 p2p=1 rtr=write ird=[0-9]+ ord=[0-9]+ ulp=''" \
	"kiwi's Request: rev 2, no CRC or Markers asked, enhanced, p2p with Write RTR"
expect $tmp/c3.log "UNREACHABLE|-110|timed out" "a silent peer: rping -c fails with a timeout"
# not the minutes of TCP's SYN retries; rping itself is slow under TCG
if [ $rc != 0 ] && [ "$(echo "$took < 15" | bc)" = 1 ]; then
	tap_ok "... after connect_timeout_ms (took ${took%.*} s)"
else
	tap_fail "... after connect_timeout_ms (rc $rc, took $took s)"
fi
expect $tmp/p3.log "^peer (reset|closed)" "the silent peer sees the connection go"

mpa_peer 7004 $tmp/p4.log --reply reject --pd nope
rping -c -a 198.18.0.2 -p 7004 -C 1 -d > $tmp/c4.log 2>&1
reap $ppid_
expect $tmp/c4.log "REJECTED" "a peer's Reply with R: rping -c sees REJECTED"

mpa_peer 7005 $tmp/p5.log --reply accept --hold 2 --ord 0
timeout 30 rping -c -a 198.18.0.2 -p 7005 -C 1 -d > $tmp/c5.log 2>&1
reap $ppid_
expect $tmp/c5.log "ESTABLISHED" "a peer's valid Reply: the connection is established"
expect $tmp/c5.log "DISCONNECT" "... and the peer's close is a disconnect"

# failures after a valid Reply are Terminates (RFC 6581 section 7)
term_check() {	# PORT DESC ECODE ARGS...
	local port=$1 desc=$2 ecode=$3
	shift 3
	mpa_peer "$port" $tmp/t.log --reply accept --hold 3 --expect-term "$@"
	rping -c -a 198.18.0.2 -p "$port" -C 1 -d > $tmp/ct.log 2>&1
	reap $ppid_
	expect $tmp/ct.log "CONNECT_ERROR|REJECTED|UNREACHABLE" "$desc: the connect fails"
	# MPA length, DDP untagged L, RDMAP Terminate, QN 2, MSN 1, MO 0,
	# layer LLP (2), type 0, the code
	expect $tmp/t.log "^term [0-9a-f]{4}4147.{8}00000002000000010000000020${ecode}" \
		"$desc: Terminate LLP/MPA code 0x$ecode on the wire"
}
term_check 7013 "responder ORD above our IRD" 06 --ord 100
term_check 7014 "responder's RTR type not offered" 07 --rtr read --ord 0

rping -c -a 198.18.0.2 -p 7099 -C 1 -d > $tmp/c9.log 2>&1
expect $tmp/c9.log "REJECTED|-111|refused" "nobody listening: connection refused"

if tc qdisc add dev veth0 clsact 2>/dev/null &&
   tc filter add dev veth0 egress protocol ip flower ip_proto tcp dst_port 7008 action drop 2>/dev/null; then
	start=$SECONDS
	rping -c -a 198.18.0.2 -p 7008 -C 1 -d > $tmp/c8.log 2>&1
	took=$((SECONDS - start))
	expect $tmp/c8.log "UNREACHABLE|-110|timed out" "SYNs lost: rping -c fails with a timeout (${took} s)"
	tc qdisc del dev veth0 clsact
else
	tap_skip "SYNs lost: timeout" "no tc flower here"
fi
conn_zero_after "after the active-side checks"

# --- rdma_reject with private data (tests/verbs/cm-reject.c) ------------
# cm-reject's pattern: byte i is (i * 7 + 3) mod 256
pat() { python3 -c "import sys; print(bytes((i * 7 + 3) & 255 for i in range(int(sys.argv[1]))).hex())" "$1"; }
rej_server() {	# NS PORT LEN LOG: a listener that rejects with LEN bytes
	local ns=$1 port=$2 len=$3 log=$4
	if [ "$ns" = - ]; then
		"$cmrej" server 198.18.0.1 "$port" "$len" > "$log" 2>&1 &
	else
		$PEER "$cmrej" server 198.18.0.2 "$port" "$len" > "$log" 2>&1 &
	fi
	spid=$!
	wait_for 15 mpa_server_ready "$log"
}
# reject_pd DESC PORT REQLEN REJLEN: kiwi1 rejects kiwi0's request
reject_pd() {
	local desc=$1 port=$2 q=$3 r=$4 rc
	rej_server peer "$port" "$r" $tmp/rs.log
	"$cmrej" client 198.18.0.2 "$port" "$q" "$r" > $tmp/rc.log 2>&1
	rc=$?
	reap $spid
	if [ $rc = 0 ] && grep -qx "request pdlen=$q pd=$(pat "$q")" $tmp/rs.log; then
		tap_ok "$desc"
	else
		tap_fail "$desc (client rc $rc)"
		tap_diag "$(cat $tmp/rc.log)" "$(cat $tmp/rs.log)"
	fi
}
# order DESC PORT: 8 connections made back to back reach the listener in
# the order they were made (perftest -q N pairs its QPs up by it)
order() {
	local desc=$1 port=$2 rc src
	$PEER "$cmrej" order-server 198.18.0.2 "$port" 8 > $tmp/os.log 2>&1 &
	spid=$!
	wait_for 15 mpa_server_ready $tmp/os.log
	"$cmrej" order-client 198.18.0.2 "$port" 8 > $tmp/oc.log 2>&1
	rc=$?
	reap $spid 30
	src=$?
	if [ $rc = 0 ] && [ $src = 0 ]; then
		tap_ok "$desc"
	else
		tap_fail "$desc (client rc $rc, server rc $src)"
		tap_diag "$(cat $tmp/oc.log)" "$(cat $tmp/os.log)"
	fi
}
cmrej=$KIWI_ROOT/tests/verbs/build/cm-reject
# Rounds of the order checks against siw (a reordering there is a race:
# one round in the default run, 20 in the fuller target).
order_rounds=${KIWI_ORDER_ROUNDS:-$([ "${KIWI_FULL:-0}" = 1 ] && echo 20 || echo 1)}
if [ -x "$cmrej" ]; then
	for i in 1 2 3; do
		order "8 connection requests made back to back reach kiwi1's listener in order (round $i)" $((7030 + i))
	done
	reject_pd "rdma_reject with 200 bytes: REJECTED at kiwi0 with them intact, the Request's 50 reached kiwi1" 7020 50 200
	reject_pd "rdma_reject with 255 bytes (iw_cm's most) both ways, intact" 7021 255 255
	reject_pd "rdma_reject without private data: REJECTED, none delivered" 7022 0 0

	# the same Reply on the wire, to a plain TCP peer
	rej_server peer 7023 100 $tmp/rs.log
	python3 "$mpa" client 198.18.0.2 7023 --pdpat 20 > $tmp/r.log 2>&1
	reap $spid
	expect $tmp/r.log "^reply key=ok rev=2 m=0 c=0 r=1 h=1 pdlen=104 .* ulphex=$(pat 100)\$" \
		"rdma_reject with 100 bytes on the wire: MPA Reply with R, IRD/ORD word and the 100 bytes"
	expect $tmp/rs.log "^request pdlen=20 pd=$(pat 20)\$" "... and the plain peer's 20 bytes reached the consumer"

	# MPA allows 512 bytes, iw_cm events carry at most 255 (u8 length):
	# kiwi delivers the first 255 (Documentation/cm.md)
	rej_server peer 7024 10 $tmp/rs.log
	python3 "$mpa" client 198.18.0.2 7024 --pdpat 400 > $tmp/r.log 2>&1
	reap $spid
	expect $tmp/rs.log "^request pdlen=255 pd=$(pat 255)\$" \
		"a Request with 400 bytes of private data: the listener gets the first 255"
	expect $tmp/r.log "^reply key=ok rev=2 .* r=1 h=1 pdlen=14 .* ulphex=$(pat 10)\$" "... and its reject reaches the peer"
	mpa_peer 7025 $tmp/p4.log --reply reject --pdpat 300
	"$cmrej" client 198.18.0.2 7025 0 255 > $tmp/rc.log 2>&1
	rc=$?
	reap $ppid_
	if [ $rc = 0 ]; then
		tap_ok "a peer's Reply with R and 300 bytes: REJECTED with the first 255"
	else
		tap_fail "a peer's Reply with R and 300 bytes: REJECTED with the first 255"
		tap_diag "$(cat $tmp/rc.log)"
	fi
	conn_zero_after "after the rejects"

	# One silent connection delays no one (security.md): a TCP connection
	# to kiwi1's listener, from this host, that never sends its Request;
	# rping's connect-and-ping time beside it stays within 300 ms of the
	# time without it, and no Request waits out its turn.  connect_timeout_ms
	# at 60 s, so that the silent one is still waiting through the runs.
	echo 60000 > $params/connect_timeout_ms
	rping_server peer 198.18.0.2 7040 $tmp/rp40.log -P
	rpid=$!
	wait_for 15 listening peer 198.18.0.2:7040
	ow0=$(cat $sysib/kiwi1/ports/1/hw_counters/order_waits_expired)
	for i in 1 2 3 4 5; do rping_ms 7040; done > $tmp/t.alone
	python3 -c 'import socket, sys, time
s = socket.create_connection(("198.18.0.2", 7040))
open(sys.argv[1], "w").write(str(s.getsockname()[1]))
time.sleep(600)' $tmp/silent.port &
	silent=$!
	wait_for 30 test -s $tmp/silent.port ||
		tap_diag "the silent connection did not come up"
	for i in 1 2 3 4 5; do rping_ms 7040; done > $tmp/t.silent
	# the silent one must still have been waiting for its Request
	if kill -0 $silent 2>/dev/null && ss -Htn state established \
		"( sport = :$(cat $tmp/silent.port) )" | grep -q 7040; then
		tap_ok "a silent connection to the listener stayed open through the timed connects"
	else
		tap_fail "a silent connection to the listener stayed open through the timed connects"
	fi
	kill $silent
	wait $silent 2>/dev/null
	ma=$(median < $tmp/t.alone)
	ms=$(median < $tmp/t.silent)
	if [ "$(wc -l < $tmp/t.alone)" = 5 ] && [ "$(wc -l < $tmp/t.silent)" = 5 ] &&
		[ $((ms - ma)) -le 300 ]; then
		tap_ok "rping beside a silent connection: median ${ms} ms, alone ${ma} ms (within 300)"
	else
		tap_fail "rping beside a silent connection: median ${ms:-?} ms, alone ${ma:-?} ms (within 300)"
		tap_diag "alone: $(tr '\n' ' ' < $tmp/t.alone) silent: $(tr '\n' ' ' < $tmp/t.silent)"
	fi
	ow1=$(cat $sysib/kiwi1/ports/1/hw_counters/order_waits_expired)
	if [ "$ow1" = "$ow0" ]; then
		tap_ok "no Request waited out its turn behind the silent connection (order_waits_expired $ow1)"
	else
		tap_fail "no Request waited out its turn behind the silent connection (order_waits_expired $ow0 -> $ow1)"
	fi
	kill $rpid 2>/dev/null
	wait $rpid 2>/dev/null

	# ibv_destroy_qp of a QP connecting to a listener that never answers
	# returns at once (not at connect_timeout_ms), and the connect ends.
	$PEER python3 -c 'import socket, sys, time
l = socket.socket()
l.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
l.bind(("198.18.0.2", 7041))
l.listen(4)
c, _ = l.accept()
d = c.recv(4096)
open(sys.argv[1], "w").write(str(len(d)))
time.sleep(120)' $tmp/req.in &
	mute=$!
	wait_for 15 listening peer 198.18.0.2:7041
	"$cmrej" destroy-connecting 198.18.0.2 7041 $tmp/req.in > $tmp/dc.log 2>&1
	rc=$?
	kill $mute
	wait $mute 2>/dev/null
	if [ $rc = 0 ]; then
		tap_ok "destroy_qp while connecting to a silent listener: $(cat $tmp/dc.log)"
	else
		tap_fail "destroy_qp while connecting to a silent listener (rc $rc, the Request's $(cat $tmp/req.in 2>/dev/null) bytes read)"
		tap_diag "$(cat $tmp/dc.log)"
	fi
	conn_zero_after "after the silent peers"
	echo 2000 > $params/connect_timeout_ms

	# the same against the reference siw, each way
	if siw_load; then
		$PEER rdma link del kiwi1
		$PEER rdma link add siw1 type siw netdev veth1
		wait_for 10 $PEER sh -c "grep -q ACTIVE /sys/class/infiniband/siw1/ports/1/state"
		reject_pd "kiwi0 to siw1: siw's rdma_reject with 200 bytes reaches kiwi intact, kiwi's 50 reach siw's listener" 7026 50 200
		for i in $(seq "$order_rounds"); do
			order "kiwi0 to siw1: 8 connection requests reach siw's listener in the order kiwi made them (round $i)" $((7400 + i))
		done
		rdma link del kiwi0
		rdma link add siw0 type siw netdev veth0
		$PEER rdma link del siw1
		$PEER rdma link add kiwi1 type kiwi netdev veth1
		wait_for 10 grep -q ACTIVE /sys/class/infiniband/siw0/ports/1/state
		reject_pd "siw0 to kiwi1: kiwi's rdma_reject with 200 bytes reaches siw intact, siw's 50 reach kiwi's listener" 7027 50 200
		for i in $(seq "$order_rounds"); do
			order "siw0 to kiwi1: 8 connection requests reach kiwi's listener in the order siw made them (round $i)" $((7500 + i))
		done
		rdma link del siw0
		rdma link add kiwi0 type kiwi netdev veth0
		siw_unload
		conn_zero_after "after the rejects with siw"
	else
		tap_skip "rejects against siw" "siw.ko not built"
	fi
else
	tap_fail "tests/verbs/build/cm-reject exists (make -C tests/verbs)"
fi

# --- IPv6 ---------------------------------------------------------------
rping_server peer fd00::2 7010 $tmp/s10.log -C 2 -v
spid=$!
wait_for 60 listening peer "[fd00::2]:7010"
python3 "$mpa" client fd00::2 7010 --hold 1 > $tmp/c10.log 2>&1
expect $tmp/c10.log "^reply key=ok rev=2 m=0 c=0 r=0 h=1 " "IPv6 listener: an MPA peer over IPv6 is accepted"
reap $spid
rping_server peer fd00::2 7011 $tmp/s11.log -C 2 -v
spid=$!
wait_for 60 listening peer "[fd00::2]:7011"
timeout 60 rping -c -a fd00::2 -p 7011 -C 2 -v > $tmp/c11.log 2>&1
reap $spid
expect $tmp/c11.log "rdma-ping-1" "kiwi to kiwi over IPv6 across namespaces: rping 2 round trips"
conn_zero_after "after IPv6"

# --- removal mid-handshake ----------------------------------------------
echo 20000 > $params/connect_timeout_ms
rping_server peer 198.18.0.2 7012 $tmp/s12.log
spid=$!
wait_for 60 listening peer 198.18.0.2:7012
python3 "$mpa" client 198.18.0.2 7012 --send none --timeout 30 > $tmp/c12.log 2>&1 &
cpid=$!
wait_for 60 ceps_are 2
start=$SECONDS
$PEER rdma link del kiwi1
took=$((SECONDS - start))
reap $cpid
reap $spid
if [ $took -le 10 ] && grep -qE "^(eof|reset)" $tmp/c12.log; then
	tap_ok "rdma link del while a Request is awaited: no wait for the timeout (${took} s), the peer sees the close"
else
	tap_fail "rdma link del while a Request is awaited (took ${took} s)"
	tap_diag "$(cat $tmp/c12.log)"
fi
rdma link del kiwi0
counts_zero_after "after removal mid-handshake"

# --- a wildcard listen from another namespace ---------------------------
# In the shared netns mode rdma_cm's wildcard listen visits every device,
# whatever its namespace; kiwi must not open a socket in kiwi0's namespace
# for a process that is not in it (it would accept connections from a
# network it is not part of).
rdma link add kiwi0 type kiwi netdev veth0
ip netns add kiwi-other
ip netns exec kiwi-other ip link set lo up
ip netns exec kiwi-other rping -s -P -a 0.0.0.0 -p 7016 > $tmp/s16.log 2>&1 &
spid=$!
if wait_for 20 sh -c "rdma resource show cm_id | grep -F 'kiwi0/' | grep 'LISTEN' | grep -q ':7016'"; then
	if not_listening_port - 7016; then
		tap_ok "a wildcard listen from another namespace opens no socket in kiwi0's"
	else
		tap_fail "a wildcard listen from another namespace opens no socket in kiwi0's"
		tap_diag "$(ss -Htln 'sport = :7016')"
	fi
else
	tap_fail "a wildcard rping -s -P in another namespace reaches kiwi0 (rdma resource show cm_id)"
	tap_diag "$(rdma resource show cm_id)" "$(cat $tmp/s16.log)"
fi
kill $spid 2>/dev/null
reap $spid 10
ip netns del kiwi-other
rdma link del kiwi0
counts_zero_after "after the listen from another namespace"

# --- the netdev goes away under a live connection -----------------------
rdma link add kiwi0 type kiwi netdev veth0
$PEER rdma link add kiwi1 type kiwi netdev veth1
rping_server peer 198.18.0.2 7015 $tmp/s15.log
spid=$!
wait_for 60 listening peer 198.18.0.2:7015
rping -c -a 198.18.0.2 -p 7015 > $tmp/c15.log 2>&1 &
cpid=$!
if wait_for 20 ceps_are 3; then
	tap_ok "a looping rping across namespaces is up"
else
	tap_fail "a looping rping across namespaces is up"
	tap_diag "$(tail -5 $tmp/c15.log)"
fi
ip link del veth0
reap $cpid 20
reap $spid 20
counts_zero_after "after deleting the veth pair under a connection (devices too)"

echo 10000 > $params/connect_timeout_ms
if dmesg | grep -E "kiwi.*leaked"; then
	tap_fail "no leak reported"
else
	tap_ok "no leak reported"
fi
tap_done
