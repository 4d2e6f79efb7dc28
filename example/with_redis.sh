#!/usr/bin/env bash
# Runs examples against a private redis-server (the tests example_dq_worker and
# example_redis_client): started on a unix socket in a temporary directory, never on a TCP
# port, and stopped when the commands end. The commands run one after the other, separated
# by the argument --then, and the first that fails ends the run with its status; an
# argument @socket@ is replaced by the socket's path.
# Usage: with_redis.sh <redis-server> <program> [args...] [--then <program> [args...]]...
# e.g.   with_redis.sh redis-server ./dq_producer --socket @socket@ --then ./dq_worker ...
set -u
redis_server=$1
shift
dir=$(mktemp -d /tmp/timewheel-example-XXXXXX)
sock=$dir/redis.sock
"$redis_server" --port 0 --unixsocket "$sock" --unixsocketperm 700 --save "" \
    --appendonly no --dir "$dir" --logfile "$dir/redis.log" &
pid=$!
i=0
while [ ! -S "$sock" ] && [ $i -lt 200 ]; do
    sleep 0.05
    i=$((i + 1))
done

status=0
command=()
run() {
    [ ${#command[@]} -eq 0 ] || "${command[@]}" || status=$?
    command=()
}
for arg in "$@"; do
    case $arg in
    --then) run ;;
    @socket@) command+=("$sock") ;;
    *) command+=("$arg") ;;
    esac
    [ "$status" -eq 0 ] || break
done
[ "$status" -ne 0 ] || run

kill "$pid"
wait "$pid" 2>/dev/null
rm -rf "$dir"
exit $status
