# services.sh — start and stop a private PostgreSQL cluster and Redis on loopback.
#
# Sourced by tests/run.sh and deploy/local/up.sh. Nothing here touches a system
# service: every server runs from a folder the caller names, on a port it names.
# PostgreSQL refuses to run as root, so when we are root the cluster belongs to the
# unprivileged "postgres" account (created by Debian's postgresql-common).

svc_pg_bin() {
    local d
    d=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)
    [ -n "$d" ] || { echo "services: no PostgreSQL server binaries under /usr/lib/postgresql" >&2; return 1; }
    echo "$d"
}

# Runs a command as the cluster owner (postgres when we are root, else ourselves).
svc_as_pg() {
    if [ "$(id -u)" = 0 ]; then
        runuser -u postgres -- "$@"
    else
        "$@"
    fi
}

# Prints a loopback TCP port that nothing listens on now and no other test has taken.
# Ports come from 10000-32767, below the kernel's ephemeral range (32768-60999), so an
# outgoing connection's local port can never take a port a test is about to bind; and
# each pick is reserved with an atomic mkdir under /tmp/sextant-ports (reservations
# older than an hour are recycled), so tests running in parallel never pick the same
# one. tests/lib/testlib.c (tl_free_port) follows the same rules.
svc_free_port() {
    local dir=/tmp/sextant-ports port tries=0
    mkdir -p "$dir" 2>/dev/null
    find "$dir" -mindepth 1 -maxdepth 1 -mmin +60 -exec rmdir {} + 2>/dev/null
    while [ $tries -lt 500 ]; do
        port=$(( 10000 + (RANDOM * 32768 + RANDOM) % 22768 ))
        if mkdir "$dir/$port" 2>/dev/null; then
            if ! (exec 3<>/dev/tcp/127.0.0.1/$port) 2>/dev/null; then
                echo "$port"
                return 0
            fi
        fi
        tries=$((tries + 1))
    done
    echo "services: no free port found" >&2
    return 1
}

# svc_pg_start DIR PORT: creates the cluster in DIR/data if needed, starts it on
# 127.0.0.1:PORT with its socket in DIR, and waits until it accepts connections.
# The superuser is "sextant" with trust authentication on loopback only.
svc_pg_start() {
    local dir=$1 port=$2 bin
    bin=$(svc_pg_bin) || return 1
    mkdir -p "$dir"
    if [ "$(id -u)" = 0 ]; then chown postgres "$dir"; fi
    if [ ! -f "$dir/data/PG_VERSION" ]; then
        svc_as_pg "$bin/initdb" -D "$dir/data" -U sextant --auth=trust -E UTF8 --no-locale \
            >"$dir/initdb.log" 2>&1 || { cat "$dir/initdb.log" >&2; return 1; }
    fi
    svc_pg_ctl_start "$dir" "$port"
}

# svc_pg_ctl_start DIR PORT: starts the cluster of DIR/data (a primary or a standby) on
# 127.0.0.1:PORT; ready for streaming replication (wal_level=replica, WAL senders).
svc_pg_ctl_start() {
    local dir=$1 port=$2 bin
    bin=$(svc_pg_bin) || return 1
    svc_as_pg "$bin/pg_ctl" -D "$dir/data" -l "$dir/postgres.log" -w -t 60 \
        -o "-c listen_addresses=127.0.0.1 -p $port -k $dir -c fsync=off -c max_connections=200 -c wal_level=replica -c max_wal_senders=10" \
        start >/dev/null || { tail -n 20 "$dir/postgres.log" >&2; return 1; }
}

# svc_pg_allow_replication DIR: a pg_hba.conf entry letting loopback clients open
# replication connections (trust, like every other loopback connection here); reloads.
svc_pg_allow_replication() {
    local dir=$1 bin
    bin=$(svc_pg_bin) || return 1
    grep -qE '^host[[:space:]]+replication[[:space:]]+all[[:space:]]+127\.0\.0\.1/32' "$dir/data/pg_hba.conf" ||
        echo "host replication all 127.0.0.1/32 trust" | svc_as_pg tee -a "$dir/data/pg_hba.conf" >/dev/null
    [ -f "$dir/data/postmaster.pid" ] && svc_as_pg "$bin/pg_ctl" -D "$dir/data" reload >/dev/null
    return 0
}

# svc_pg_standby DIR PORT PRIMARY_PORT: a hot standby of the primary on PRIMARY_PORT,
# made by pg_basebackup -R (streaming replication) into DIR/data (replacing what was
# there) and started on PORT.
svc_pg_standby() {
    local dir=$1 port=$2 primary=$3 bin
    bin=$(svc_pg_bin) || return 1
    rm -rf "$dir/data"
    mkdir -p "$dir"
    if [ "$(id -u)" = 0 ]; then chown postgres "$dir"; fi
    svc_as_pg "$bin/pg_basebackup" -h 127.0.0.1 -p "$primary" -U sextant -D "$dir/data" -R \
        -X stream -c fast >"$dir/basebackup.log" 2>&1 || { cat "$dir/basebackup.log" >&2; return 1; }
    svc_pg_ctl_start "$dir" "$port"
}

# svc_pg_kill DIR: stops the cluster the hard way (pg_ctl -m immediate: no checkpoint,
# clients cut off), as a crash of its host would.
svc_pg_kill() {
    local dir=$1 bin
    bin=$(svc_pg_bin) || return 1
    svc_as_pg "$bin/pg_ctl" -D "$dir/data" -m immediate -w -t 60 stop >/dev/null
}

# svc_pg_promote DIR: promotes the standby of DIR to a primary; returns once it is one.
svc_pg_promote() {
    local dir=$1 bin
    bin=$(svc_pg_bin) || return 1
    svc_as_pg "$bin/pg_ctl" -D "$dir/data" -w -t 60 promote >/dev/null
}

# svc_pg_stop DIR: fast shutdown; quiet when nothing runs there.
svc_pg_stop() {
    local dir=$1 bin
    bin=$(svc_pg_bin) || return 1
    [ -f "$dir/data/postmaster.pid" ] || return 0
    svc_as_pg "$bin/pg_ctl" -D "$dir/data" -m fast -w -t 60 stop >/dev/null 2>&1 || true
}

# svc_stop_pid PIDFILE TENTHS [WHAT]: SIGTERM to the process in PIDFILE, then up to
# TENTHS tenths of a second for it to exit; with WHAT, a SIGKILL if it has not and the
# line "stopped WHAT (pid N)". The pid file is removed.
svc_stop_pid() {
    [ -f "$1" ] || return 0
    local pid
    pid=$(cat "$1")
    if kill -0 "$pid" 2>/dev/null; then
        kill -TERM "$pid"
        for _ in $(seq 1 "$2"); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
        if [ -n "${3:-}" ]; then
            kill -0 "$pid" 2>/dev/null && kill -KILL "$pid"
            echo "stopped $3 (pid $pid)"
        fi
    fi
    rm -f "$1"
}

# svc_redis_start DIR PORT: a Redis on 127.0.0.1:PORT with no persistence, daemonised,
# its pid in DIR/redis.pid; waits until it answers PING.
svc_redis_start() {
    local dir=$1 port=$2 i
    mkdir -p "$dir"
    redis-server --port "$port" --bind 127.0.0.1 --daemonize yes --dir "$dir" \
        --pidfile "$dir/redis.pid" --logfile "$dir/redis.log" --save "" --appendonly no \
        >/dev/null || return 1
    for i in $(seq 1 100); do
        redis-cli -h 127.0.0.1 -p "$port" ping >/dev/null 2>&1 && return 0
        sleep 0.1
    done
    echo "services: redis on port $port did not answer" >&2
    return 1
}

# svc_redis_stop DIR
svc_redis_stop() {
    local dir=$1 pid i
    [ -f "$dir/redis.pid" ] || return 0
    pid=$(cat "$dir/redis.pid")
    kill "$pid" 2>/dev/null || true
    for i in $(seq 1 50); do
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.1
    done
    rm -f "$dir/redis.pid"
}
