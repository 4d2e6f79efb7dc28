# Sourced by the benchmark scripts: starts a redis-server of their own, on a free loopback
# port, without persistence, in a temporary directory, and stops it (and removes the
# directory) when the script exits. Other redis-servers may run on this machine (on 6379, or
# a fixed port of another program): a benchmark that FLUSHALLs must never reach them, so the
# server that answers on the port is checked to be the one started here.
#
#   source scripts/lib/private-redis.sh
#   start_private_redis timewheel-bench-x     # sets redis_dir, redis_port, redis_pid
start_private_redis() { # $1 = a name for the temporary directory
  redis_dir=$(mktemp -d "/tmp/$1-XXXXXX")
  redis_port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  redis-server --bind 127.0.0.1 --port "$redis_port" --save '' --appendonly no \
    --daemonize no --dir "$redis_dir" --logfile "$redis_dir/redis.log" &
  redis_pid=$!
  trap 'kill $redis_pid 2>/dev/null; wait $redis_pid 2>/dev/null; rm -rf "$redis_dir"' EXIT
  for _ in $(seq 100); do
    redis-cli -p "$redis_port" ping >/dev/null 2>&1 && break
    sleep 0.05
  done
  if [ "$(redis-cli -p "$redis_port" info server | tr -d '\r' | sed -n 's/^process_id://p')" \
       != "$redis_pid" ]; then
    echo "the redis-server on port $redis_port is not ours (pid $redis_pid): giving up" >&2
    exit 1
  fi
}
