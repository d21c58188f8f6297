#!/bin/sh
# Run a long install step and say every 20 s how long it has been running, so a quiet step
# (pip's "Installing collected packages", npm ci) never looks hung.
# Usage: ops/with-progress.sh LABEL COMMAND [ARG...]; exits with COMMAND's status.
label=$1
shift
start=$(date +%s)
(
  trap 'kill $nap 2>/dev/null; exit 0' TERM
  while :; do
    sleep 20 &
    nap=$!
    wait $nap
    echo "    ... $label: still running after $(($(date +%s) - start)) s"
  done
) &
ticker=$!
"$@"
status=$?
kill $ticker 2>/dev/null
wait $ticker 2>/dev/null
exit $status
