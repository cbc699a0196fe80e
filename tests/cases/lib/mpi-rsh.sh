#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# Open MPI's launcher agent for guests without ssh (mpi-lib.sh passes it
# as plm_rsh_agent):
#
#   mpi-rsh.sh HOST COMMAND...
#
# runs COMMAND (the orted command line that Open MPI's rsh launcher builds,
# one string for a shell, as ssh would take it) on HOST and exits with its
# status, as ssh does.  HOST is reached through KIWI_MPI_EXEC_DIR, a
# directory both hosts see (the two-host bench's run directory, 9p): the
# command goes into ID.cmd there, the other host's mpi_exec_serve
# (mpi-lib.sh) claims and runs it, and leaves its output in ID.out and its
# status in ID.rc.  An unclaimed command is withdrawn after
# KIWI_MPI_EXEC_CLAIM seconds (default 60), status 255.
set -u
host=${1:?usage: mpi-rsh.sh HOST COMMAND...}
shift
d=${KIWI_MPI_EXEC_DIR:?mpi-rsh.sh: KIWI_MPI_EXEC_DIR is not set}
id=$d/$host.$$.$RANDOM
printf '%s\n' "$*" > "$id.tmp" && mv "$id.tmp" "$id.cmd" || exit 255
end=$((SECONDS + ${KIWI_MPI_EXEC_CLAIM:-60}))
while [ -e "$id.cmd" ]; do
	if [ $SECONDS -ge $end ] && rm "$id.cmd" 2>/dev/null; then
		echo "mpi-rsh.sh: no one ran the command for $host" >&2
		exit 255
	fi
	sleep 0.2
done
while [ ! -e "$id.rc" ]; do
	sleep 0.5
done
cat "$id.out" 2>/dev/null
exit "$(cat "$id.rc")"
