#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# The bench tests itself: every way a run can go wrong must be reported as
# a failure by vm-run.sh and guest-suite.sh.  Prints TAP; about a minute.
# The body is one compound command, read whole before it runs, so that
# editing this file cannot change a run that is under way.
{
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
cd "$root" || exit 1
vm=$here/vm-run.sh
tmp=$(mktemp -d "$here/out/selftest.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
n=0
failed=0

check() {
	n=$((n + 1))
	if eval "$2"; then
		echo "ok $n - $1"
	else
		echo "not ok $n - $1"
		failed=1
		sed 's/^/#   /' "$tmp/out" | tail -n 15
	fi
}

# 1: status, arguments and KIWI_* variables make the trip intact.
KIWI_SELFTEST='a b$c' "$vm" --timeout 60 -- bash -c \
	'printf "<%s>" "$@" "$KIWI_SELFTEST"; echo; pwd; exit 7' x 'one two' "it's" \
	> "$tmp/out" 2>&1
rc=$?
check "the command's exit status comes back (7)" '[ $rc = 7 ]'
check "arguments and KIWI_* variables arrive unchanged" \
	"grep -qxF \"<one two><it's><a b\\\$c>\" \"\$tmp/out\""
check "the command runs in the repository root" "grep -qx '$root' \"\$tmp/out\""

# 2: a command that outlives its limit is stopped: 124.
"$vm" --timeout 5 -- sleep 600 > "$tmp/out" 2>&1
rc=$?
check "a command over its time limit gives 124" '[ $rc = 124 ]'

# 3: a kernel complaint fails the run even when the command succeeds.
"$vm" --timeout 60 -- sh -c 'echo "BUG: kiwi bench self-test" > /dev/kmsg' \
	> "$tmp/out" 2>&1
rc=$?
check "a BUG in the kernel log fails a run whose command exits 0" '[ $rc != 0 ]'

# 4: a guest that dies keeps the output it printed and fails.
"$vm" --timeout 60 -- sh -c 'echo before-crash; echo c > /proc/sysrq-trigger; echo after' \
	> "$tmp/out" 2>&1
rc=$?
check "a kernel crash fails the run" '[ $rc != 0 ]'
check "output printed before the crash is kept" \
	"grep -qx before-crash \"\$tmp/out\" && ! grep -qx after \"\$tmp/out\""

# 5: a guest that never answers is killed by the host: 124.
KIWI_VM_MARGIN=0 "$vm" --timeout 2 -- true > "$tmp/out" 2>&1
rc=$?
check "a silent guest is killed by the host-side limit (124)" '[ $rc = 124 ]'

# 6: the in-guest suite's verdicts.
mkdir -p "$tmp/cases"
printf '#!/bin/bash\necho "ok 1 - x"; echo 1..1; exit 3\n' > "$tmp/cases/01-exit.sh"
printf '#!/bin/bash\necho hello\n' > "$tmp/cases/02-notap.sh"
printf '#!/bin/bash\necho "ok 1 - x"; echo "WARNING: kiwi bench self-test" > /dev/kmsg; echo 1..1\n' \
	> "$tmp/cases/03-dmesg.sh"
printf '#!/bin/bash\n# timeout: 3\necho "ok 1 - x"; sleep 600\n' > "$tmp/cases/04-slow.sh"
printf '#!/bin/bash\necho "ok 1 - fine"; echo 1..1\n' > "$tmp/cases/05-good.sh"
printf '#!/bin/bash\necho "ok 1 - x"\n' > "$tmp/cases/06-noplan.sh"
printf '#!/bin/bash\necho "ok 1 - x"; echo 1..2\n' > "$tmp/cases/07-shortplan.sh"
# a daemon left running: iwpmd makes every later connect wait on it
printf '#!/bin/bash\niwpmd; echo "ok 1 - x"; echo 1..1\n' > "$tmp/cases/08-leftover.sh"
# a network namespace, and a veth pair, left behind
printf '#!/bin/bash\nip netns add kiwi-selftest; echo "ok 1 - x"; echo 1..1\n' \
	> "$tmp/cases/09-netns.sh"
printf '#!/bin/bash\nmodprobe veth; ip link add kst0 type veth peer name kst1; echo "ok 1 - x"; echo 1..1\n' \
	> "$tmp/cases/10-veth.sh"
# after them, a good case: the suite cleaned up and says no more
printf '#!/bin/bash\n[ -z "$(ip netns list; ip -o link show type veth)" ] || echo -n "not "\necho "ok 1 - clean"; echo 1..1\n' \
	> "$tmp/cases/11-clean.sh"
chmod +x "$tmp"/cases/*.sh
KIWI_CASES_DIR=${tmp#"$root"/}/cases "$vm" --timeout 200 -- \
	bash tests/vm/guest-suite.sh > "$tmp/out" 2>&1
rc=$?
check "suite: fails overall when a case fails" '[ $rc != 0 ]'
check "suite: a case exiting non-zero fails despite its ok lines" \
	"grep -q '^01-exit: not ok - case failed: exit status 3' \"\$tmp/out\""
check "suite: a case without TAP fails" \
	"grep -q '^02-notap: not ok - case failed: printed no TAP' \"\$tmp/out\""
check "suite: a kernel warning during a case fails it" \
	"grep -q '^03-dmesg: not ok - case failed: kernel log' \"\$tmp/out\""
check "suite: a case over its time limit fails and the suite goes on" \
	"grep -q '^04-slow: not ok - case failed: timed out after 3s' \"\$tmp/out\" &&
	 grep -q '^05-good: ok 1 - fine' \"\$tmp/out\""
check "suite: a good case gets no failure line" \
	"! grep -q '^05-good: not ok' \"\$tmp/out\""
check "suite: a case without a plan fails" \
	"grep -q '^06-noplan: not ok - case failed: printed no TAP plan' \"\$tmp/out\""
check "suite: a case whose plan does not count its results fails" \
	"grep -q '^07-shortplan: not ok - case failed: plan 1..2 but 1 results' \"\$tmp/out\""
check "suite: a case that leaves a daemon running fails" \
	"grep -q '^08-leftover: not ok - case failed: left state behind' \"\$tmp/out\""
check "suite: a case that leaves a network namespace fails, naming it" \
	"grep -q '^# 09-netns: left network namespace kiwi-selftest behind' \"\$tmp/out\" &&
	 grep -q '^09-netns: not ok - case failed: left state behind: 1 item' \"\$tmp/out\""
check "suite: a case that leaves a veth pair fails, naming both ends" \
	"grep -q '^# 10-veth: left veth kst0 behind' \"\$tmp/out\" &&
	 grep -q '^# 10-veth: left veth kst1 behind' \"\$tmp/out\" &&
	 grep -q '^10-veth: not ok - case failed: left state behind: 2 item' \"\$tmp/out\""
check "suite: what they left is gone before the next case" \
	"grep -q '^11-clean: ok 1 - clean' \"\$tmp/out\" &&
	 ! grep -q '^11-clean: not ok' \"\$tmp/out\""

echo "1..$n"
exit $failed
exit
}
