#!/usr/bin/env bash
# tests/services/down.sh -- stop what tests/services/up.sh started (`make services-down`).
#
# Stops, by the pid files under .services/ (and only if the pid's command line is still the expected
# program): the Kafka broker (its log dir removed: the next start makes a new one), moto_server and the PRIVATE MariaDB instances (clean shutdown by SIGTERM,
# SIGKILL after a bounded wait). Never touches the machine's PostgreSQL or its MariaDB on 3306.
# Removes .services/services.env. The MariaDB datadir is kept so the next up.sh is fast; pass --purge
# to delete .services/ entirely. Safe to run any number of times.
set -uo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
SVC="$ROOT/.services"
PURGE=0
[[ "${1:-}" == "--purge" ]] && PURGE=1

if [[ ! -d "$SVC" ]]; then
    echo "down.sh: nothing to stop (no ${SVC#"$ROOT"/}/)"
    exit 0
fi
if command -v flock >/dev/null 2>&1; then
    exec 9>"$SVC/.lock"
    flock -w 300 9 || { echo "down.sh: could not lock $SVC/.lock" >&2; exit 1; }
fi

rc=0
alive() {  # running and not a zombie waiting to be reaped
    kill -0 "$1" 2>/dev/null && [[ "$(sed 's/^.*) //' "/proc/$1/stat" 2>/dev/null | cut -c1)" != Z ]]
}
# stop NAME PIDFILE PATTERN TIMEOUT_SECONDS
stop() {
    local name="$1" pidfile="$2" pattern="$3" timeout="$4" pid
    if [[ ! -f "$pidfile" ]]; then
        printf 'down.sh: %-8s not running\n' "$name"
        return 0
    fi
    pid="$(tr -dc '0-9' <"$pidfile")"
    if [[ -z "$pid" ]] || ! alive "$pid" \
            || ! tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -qF -- "$pattern"; then
        printf 'down.sh: %-8s not running (stale pid file removed)\n' "$name"
        rm -f "$pidfile"
        return 0
    fi
    kill -TERM "$pid" 2>/dev/null
    local deadline=$((SECONDS + timeout))
    while alive "$pid" && ((SECONDS < deadline)); do
        sleep 0.1
    done
    if alive "$pid"; then
        kill -KILL "$pid" 2>/dev/null
        sleep 0.2
        printf 'down.sh: %-8s pid %s killed (did not stop within %ss)\n' "$name" "$pid" "$timeout"
    else
        printf 'down.sh: %-8s pid %s stopped\n' "$name" "$pid"
    fi
    if alive "$pid"; then
        echo "down.sh: $name pid $pid is still alive" >&2
        rc=1
    fi
    rm -f "$pidfile"
}

rm -f "$SVC/services.env"
stop kafka   "$SVC/kafka/kafka.pid"        kafka.Kafka                    30
rm -rf "$SVC/kafka/bootstrap" "$SVC/kafka/data"
stop s3      "$SVC/moto.pid"               moto_server                    10
for dir in "$SVC"/mariadb "$SVC"/mariadb[0-9]* "$SVC"/mariadb-tls; do
    [[ -d "$dir" ]] && stop "$(basename "$dir")" "$dir/mariadb.pid" "--datadir=$dir/data " 120
done
echo "down.sh: postgres (machine's cluster, left running)"

if ((PURGE)) && ((rc == 0)); then
    rm -rf "$SVC"
    echo "down.sh: removed ${SVC#"$ROOT"/}/"
fi
exit "$rc"
