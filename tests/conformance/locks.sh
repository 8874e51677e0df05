#!/bin/bash
# Shell scripts taking zklockfs locks the way shell programmers do: `exec 9>`
# on a lock directory's entry, util-linux flock(1) on a lock file (both
# the `flock FILE cmd` and the `exec 9>F; flock 9` forms), and a lock tree
# walked with find and ls and removed with rm -r.  Run by
# tests/integration/test_languages.py; see tests/conformance/README.md.
#
#   bash locks.sh MODE LOG TASKS CYCLES HOLD_MS PREFIX PATH
#   bash locks.sh walk ROOT
#
# Each of TASKS background subshells (named PREFIX "t" N) does CYCLES
# critical sections on PATH.  A section appends "enter ID NS" to LOG once
# the lock is granted, sleeps HOLD_MS, appends "leave ID NS", and only then
# gives the lock back; the task sleeps 1 ms before its next cycle.  NS is
# from $EPOCHREALTIME (wall clock, microseconds: the log's order, one
# O_APPEND write a line, is what counts).  Exit 0 once every task did its
# cycles; a failure is printed on stderr, exit status 1.
#
#   dir        exec 9>"PATH/ID" takes the lock, exec 9>&- gives it back
#   flock-cmd  flock -x PATH bash -c SECTION (flock(1) opens, locks, runs)
#   flock-fd   exec 9>PATH once; flock 9 / flock -u 9 each cycle
#
#   nb PATH    exec 9>PATH; flock 9; then exec 8>PATH; flock -n 8 (from
#              the same script): prints "nb 0" if it took the lock, else
#              "nb 1" (flock(1)'s status when the lock is held); then
#              flock -u 9 and a blocking flock 8: "after STATUS"
#
# walk ROOT: "walk REL" for each directory `find ROOT -mindepth 1 -type d`
# lists, "list NAME" for each name `ls -A ROOT` lists, then rm -r ROOT and
# "removed".
set -u

now() { local t=$EPOCHREALTIME; echo "${t/./}000"; }

if [ "$1" = walk ]; then
	root=$2
	set -e
	find "$root" -mindepth 1 -type d | while read -r d; do echo "walk ${d#"$root"/}"; done
	ls -A "$root" | while read -r n; do echo "list $n"; done
	rm -r "$root"
	echo removed
	exit 0
fi

mode=$1 log=$2 tasks=$3 cycles=$4 hold_ms=$5 prefix=$6 path=$7
hold=$(printf '0.%03d' "$hold_ms")

if [ "$mode" = nb ]; then
	exec 9>"$path"
	flock 9 || { echo "error flock 9: $?" >&2; exit 1; }
	exec 8>"$path"
	flock -n 8
	echo "nb $?"
	flock -u 9
	flock 8
	echo "after $?"
	exit 0
fi

section() {
	echo "enter $1 $(now)" >>"$log"
	sleep "$hold"
	echo "leave $1 $(now)" >>"$log"
}

task() {
	local id=$1 c
	case $mode in
	dir)
		for ((c = 0; c < cycles; c++)); do
			exec 9>"$path/$id" || exit 1
			section "$id"
			exec 9>&-
			sleep 0.001
		done ;;
	flock-cmd)
		for ((c = 0; c < cycles; c++)); do
			flock -x "$path" bash -c "$(declare -f now section); log='$log' hold='$hold' section '$id'" ||
				{ echo "error $id: flock -x exited $?" >&2; exit 1; }
			sleep 0.001
		done ;;
	flock-fd)
		exec 9>"$path" || exit 1
		for ((c = 0; c < cycles; c++)); do
			flock 9 || { echo "error $id: flock 9 exited $?" >&2; exit 1; }
			section "$id"
			flock -u 9
			sleep 0.001
		done
		exec 9>&- ;;
	*)
		echo "unknown mode $mode" >&2
		exit 2 ;;
	esac
}

pids=()
for ((i = 0; i < tasks; i++)); do
	task "${prefix}t$i" &
	pids+=($!)
done
status=0
for p in "${pids[@]}"; do
	wait "$p" || status=1
done
exit $status
