#!/bin/sh
# Runs the durable queue's examples against a private redis-server (the test
# example_dq_worker): started on a unix socket in a temporary directory, never on a TCP
# port; dq_producer submits 50 tasks due over one second, dq_worker runs them and exits
# after the 50th.
# Usage: run_dq_examples.sh <redis-server> <dq_producer> <dq_worker>
set -u
redis_server=$1
producer=$2
worker=$3
dir=$(mktemp -d /tmp/timewheel-dq-example-XXXXXX)
sock=$dir/redis.sock
"$redis_server" --port 0 --unixsocket "$sock" --unixsocketperm 700 --save "" \
    --appendonly no --dir "$dir" --logfile "$dir/redis.log" &
pid=$!
i=0
while [ ! -S "$sock" ] && [ $i -lt 200 ]; do
    sleep 0.05
    i=$((i + 1))
done
"$producer" --socket "$sock" --queue example --count 50 --spread-ms 1000 &&
    "$worker" --socket "$sock" --queue example --exit-after 50 --quiet
status=$?
kill "$pid"
wait "$pid" 2>/dev/null
rm -rf "$dir"
exit $status
