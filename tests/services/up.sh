#!/usr/bin/env bash
# tests/services/up.sh -- start the real services the tests use, all on 127.0.0.1 (`make services-up`).
#
#   mariadb   a PRIVATE MariaDB with ROW binary logging: datadir/socket/pid/logs under .services/mariadb/,
#             port $LAKECONNECT_MARIADB_PORT (default 3316); root without password; database lakeconnect_test.
#   mariadb2  a second one like it (.services/mariadb2/, the next port, 3317), so that the MySQL CDC tests
#             can run on two pytest workers with a binlog each (tests/services/pytest.sh).
#             $LAKECONNECT_MARIADB_INSTANCES sets how many there are (default 2).
#             (The machine's own MariaDB on 3306 is never touched.)
#   mariadb-tls  one more that accepts TLS connections only (require_secure_transport), for the CDC
#             source's database.ssl.* tests: .services/mariadb-tls/, port $LAKECONNECT_MARIADB_TLS_PORT
#             (default 3325). Its certificate (for IP 127.0.0.1 only) is signed by a CA up.sh makes
#             under .services/tls/, with the stores a Java user has: trust.p12 (keytool's PKCS12 trust
#             store of that CA, password changeit), client.p12 (a client certificate and key), and
#             other-trust.p12 (another CA, which must not be trusted); PEM copies beside them.
#   postgres  the machine's PostgreSQL on 127.0.0.1:$LAKECONNECT_POSTGRES_PORT (default 5432), started
#             with pg_ctlcluster if it does not answer; database lakeconnect_test. If password-less
#             access over TCP is refused, role postgres gets the password `postgres`.
#   s3        moto_server on port $LAKECONNECT_S3_PORT (default 5055); log and pid under .services/.
#   kafka     a real Apache Kafka 4.x broker in KRaft mode (broker and controller in one JVM, from the jars
#             `make setup` fetched into .jars/broker; settings by tests/services/kafka_broker.py) on
#             127.0.0.1:$LAKECONNECT_KAFKA_PORT (default: a free port), its log dir new at every start
#             under .services/kafka/; topics orders:5 topic-to-export:1 connect-batch-markers:1
#             ($LAKECONNECT_KAFKA_TOPICS) and lakeconnect-selftest:1 created through the admin API.
#
# Writes every address to .services/services.env (KEY=value lines, read by tests/services/fixtures.py).
# Idempotent: services already running (pid alive + answering) are reused. Prints one line per service;
# exits 1 with a message (and the log tail) if any service fails, in which case services.env is not
# written. Waits are bounded by $LAKECONNECT_SERVICES_WAIT seconds (default 60) per service.
# Stop with tests/services/down.sh.
set -uo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
SVC="$ROOT/.services"
PY="$ROOT/.venv/bin/python"
WAIT="${LAKECONNECT_SERVICES_WAIT:-60}"

MARIADB_PORT="${LAKECONNECT_MARIADB_PORT:-3316}"
MARIADB_INSTANCES="${LAKECONNECT_MARIADB_INSTANCES:-2}"
MARIADB_TLS_PORT="${LAKECONNECT_MARIADB_TLS_PORT:-3325}"
TLS_DIR="$SVC/tls"
PG_PORT="${LAKECONNECT_POSTGRES_PORT:-5432}"
S3_PORT="${LAKECONNECT_S3_PORT:-5055}"
KAFKA_PORT="${LAKECONNECT_KAFKA_PORT:-0}"
KAFKA_TOPICS="${LAKECONNECT_KAFKA_TOPICS:-orders:5 topic-to-export:1 connect-batch-markers:1}"
DB="lakeconnect_test"

now_us() { echo "${EPOCHREALTIME//[.,]/}"; }
START_TS=$(now_us)
mkdir -p "$SVC"
if command -v flock >/dev/null 2>&1; then  # one up.sh/down.sh at a time
    exec 9>"$SVC/.lock"
    flock -w 300 9 || { echo "up.sh: could not lock $SVC/.lock" >&2; exit 1; }
fi

if [[ ! -x "$PY" ]]; then
    echo "up.sh: $PY missing: run \`make setup\` first" >&2
    exit 1
fi

failures=()
ok()   { printf 'up.sh: %-8s %s\n' "$1" "$2"; }
fail() { printf 'up.sh: %-8s FAILED: %s\n' "$1" "$2" >&2; failures+=("$1"); }
tail_log() { [[ -f "$1" ]] && { echo "----- last lines of $1:"; tail -n 25 "$1"; echo "-----"; } >&2; }
elapsed() { local ds=$((($(now_us) - $1) / 100000)); echo "$((ds / 10)).$((ds % 10))"; }  # seconds since $1

# pid_of PIDFILE PATTERN...: prints the pid if it is alive and its command line contains every PATTERN.
pid_of() {
    local pid cmdline pattern
    [[ -f "$1" ]] || return 1
    pid="$(tr -dc '0-9' <"$1")"
    [[ -n "$pid" ]] && kill -0 "$pid" 2>/dev/null || return 1
    cmdline="$(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null)"
    for pattern in "${@:2}"; do
        [[ "$cmdline" == *"$pattern"* ]] || return 1
    done
    echo "$pid"
}
port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# ---------------------------------------------------------------------------------------------------
# MariaDB (private, binlog): instance 1 in .services/mariadb on $MARIADB_PORT, instance k>1 in
# .services/mariadb<k> on $MARIADB_PORT+k-1. The later ones serve only the CDC tests' second worker.
MDB_CLIENT="$(command -v mariadb || command -v mysql || true)"
MARIADBD="$(command -v mariadbd || ls /usr/sbin/mariadbd /usr/sbin/mysqld 2>/dev/null | head -n1 || true)"
MDB_INSTALL_DB="$(command -v mariadb-install-db || command -v mysql_install_db || true)"

mdb_dir() {
    if [[ "$1" == tls ]]; then echo "$SVC/mariadb-tls"; elif (($1 == 1)); then echo "$SVC/mariadb"; else echo "$SVC/mariadb$1"; fi
}
mdb_socket() {  # unix socket paths are limited to 107 bytes
    local sock="$1/mariadb.sock"
    ((${#sock} > 100)) && sock="/tmp/lakeconnect-mariadb-$(echo "$1" | sha1sum | cut -c1-12).sock"
    echo "$sock"
}
# Set by start_mariadb for the instance it starts; the helpers below read them.
MDB_SOCK=""
MDB_PORT=""
MDB_TCP_TLS=()
mdb_tcp()  { "$MDB_CLIENT" --no-defaults --protocol=TCP -h 127.0.0.1 -P "$MDB_PORT" -u root --connect-timeout=2 "${MDB_TCP_TLS[@]}" -N -B "$@"; }
mdb_sock() { "$MDB_CLIENT" --no-defaults --socket="$MDB_SOCK" -u root --connect-timeout=2 -N -B "$@"; }

# make_tls: the CAs, the TLS instance's certificate and the client's stores in $TLS_DIR (kept once made).
make_tls() {
    [[ -f "$TLS_DIR/other-trust.p12" ]] && return 0
    local keytool
    keytool="$(command -v keytool || true)"
    [[ -z "$keytool" ]] && { fail tls "keytool (from the JDK) not found: run \`make setup\`"; return 1; }
    rm -rf "$TLS_DIR.new" && mkdir -p "$TLS_DIR.new" && (
        set -e
        cd "$TLS_DIR.new"
        ossl() { openssl "$@" 2>/dev/null; }
        for ca in ca other-ca; do
            ossl req -x509 -newkey rsa:2048 -nodes -sha256 -days 3650 -keyout "$ca-key.pem" -out "$ca.pem" \
                -subj "/CN=lakeconnect test $ca"
        done
        printf 'subjectAltName=IP:127.0.0.1\n' >server.ext
        ossl req -newkey rsa:2048 -nodes -keyout server-key.pem -out server.csr -subj "/CN=lakeconnect test server"
        ossl x509 -req -in server.csr -CA ca.pem -CAkey ca-key.pem -CAcreateserial -days 3650 -sha256 \
            -extfile server.ext -out server-cert.pem
        ossl req -newkey rsa:2048 -nodes -keyout client-key.pem -out client.csr -subj "/CN=lc_x509"
        ossl x509 -req -in client.csr -CA ca.pem -CAkey ca-key.pem -CAcreateserial -days 3650 -sha256 \
            -out client-cert.pem
        ossl pkcs12 -export -in client-cert.pem -inkey client-key.pem -name client -out client.p12 \
            -passout pass:changeit
        "$keytool" -importcert -noprompt -alias ca -file ca.pem -keystore trust.p12 -storetype PKCS12 \
            -storepass changeit >/dev/null 2>&1
        "$keytool" -importcert -noprompt -alias other -file other-ca.pem -keystore other-trust.p12 \
            -storetype PKCS12 -storepass changeit >/dev/null 2>&1
        rm -f ./*.csr ./*.srl server.ext
    ) || { fail tls "openssl/keytool could not make the test certificates"; return 1; }
    rm -rf "$TLS_DIR" && mv "$TLS_DIR.new" "$TLS_DIR"
}

# start_mariadb K: instance K (1, 2, ...), or `tls`: the TLS-only one.
start_mariadb() {
    local k="$1" pid user_opt=() t0=$(now_us) started="" name="mariadb" tls_opt=() pool=512M
    MDB_TCP_TLS=()
    if [[ "$k" == tls ]]; then
        name="mariadb-tls" pool=64M
        tls_opt=(--ssl-ca="$TLS_DIR/ca.pem" --ssl-cert="$TLS_DIR/server-cert.pem" --ssl-key="$TLS_DIR/server-key.pem"
                 --require-secure-transport=ON)
        MDB_TCP_TLS=(--ssl)
    elif ((k > 1)); then
        name="mariadb$k"
    fi
    local base_port="$MARIADB_PORT"
    local MDB_DIR MDB_DATA MDB_PIDF MDB_LOG MARIADB_PORT
    if [[ "$k" == tls ]]; then MARIADB_PORT="$MARIADB_TLS_PORT"; else MARIADB_PORT=$((base_port + k - 1)); fi
    MDB_DIR="$(mdb_dir "$k")"
    MDB_DATA="$MDB_DIR/data"
    MDB_PIDF="$MDB_DIR/mariadb.pid"
    MDB_LOG="$MDB_DIR/error.log"
    MDB_SOCK="$(mdb_socket "$MDB_DIR")"
    MDB_PORT="$MARIADB_PORT"
    if [[ -z "$MDB_CLIENT" || -z "$MARIADBD" || -z "$MDB_INSTALL_DB" ]]; then
        fail "$name" "mariadbd / mariadb-install-db / mariadb client not found: run \`make setup\`"
        return 1
    fi
    [[ "$(id -u)" -eq 0 ]] && user_opt=(--user=root)
    mkdir -p "$MDB_DIR"

    if ! pid="$(pid_of "$MDB_PIDF" "--datadir=$MDB_DATA" "--port=$MARIADB_PORT ")"; then
        if pid="$(pid_of "$MDB_PIDF" "--datadir=$MDB_DATA")"; then
            fail "$name" "pid $pid runs on another port than $MARIADB_PORT: run tests/services/down.sh first"
            return 1
        fi
        if port_open "$MARIADB_PORT"; then
            fail "$name" "port $MARIADB_PORT is already used by another process (set LAKECONNECT_MARIADB_PORT)"
            return 1
        fi
        rm -f "$MDB_PIDF" "$MDB_SOCK" "$MDB_SOCK.lock"
        if [[ ! -d "$MDB_DATA/mysql" ]]; then
            rm -rf "$MDB_DATA" "$MDB_DATA.init"
            if ! "$MDB_INSTALL_DB" --no-defaults "${user_opt[@]}" --datadir="$MDB_DATA.init" \
                    --auth-root-authentication-method=normal --skip-test-db \
                    >"$MDB_DIR/install-db.log" 2>&1; then
                fail "$name" "mariadb-install-db failed"
                tail_log "$MDB_DIR/install-db.log"
                return 1
            fi
            mv "$MDB_DATA.init" "$MDB_DATA"
        fi
        nohup "$MARIADBD" --no-defaults "${user_opt[@]}" \
            --datadir="$MDB_DATA" --port="$MARIADB_PORT" --bind-address=127.0.0.1 \
            --socket="$MDB_SOCK" --pid-file="$MDB_PIDF" --log-error="$MDB_LOG" \
            --log-bin=mariadb-bin --binlog-format=ROW --binlog-row-image=FULL \
            --server-id=1 "${tls_opt[@]}" \
            --character-set-server=utf8mb4 --collation-server=utf8mb4_general_ci \
            --innodb-flush-log-at-trx-commit=2 --innodb-buffer-pool-size=$pool \
            </dev/null >>"$MDB_DIR/mariadbd.out" 2>&1 9>&- &
        pid=$!
        started=" (started"
    fi

    local deadline=$((SECONDS + WAIT))
    until mdb_sock -e 'SELECT 1' >/dev/null 2>&1 || mdb_tcp -e 'SELECT 1' >/dev/null 2>&1; do
        if ! kill -0 "$pid" 2>/dev/null; then
            fail "$name" "mariadbd (pid $pid) exited during start-up"
            tail_log "$MDB_LOG"
            return 1
        fi
        if ((SECONDS >= deadline)); then
            fail "$name" "mariadbd (pid $pid) did not answer SELECT 1 within ${WAIT}s"
            tail_log "$MDB_LOG"
            [[ -n "$started" ]] && kill "$pid" 2>/dev/null
            return 1
        fi
        sleep 0.2
    done
    [[ -n "$started" ]] && started="$started, ready in $(elapsed "$t0")s)"

    # root with an empty password over TCP from 127.0.0.1
    if ! mdb_tcp -e 'SELECT 1' >/dev/null 2>&1; then
        mdb_sock -e "CREATE USER IF NOT EXISTS 'root'@'127.0.0.1' IDENTIFIED BY '';
                     GRANT ALL PRIVILEGES ON *.* TO 'root'@'127.0.0.1' WITH GRANT OPTION;
                     FLUSH PRIVILEGES;" >/dev/null 2>&1
        if ! mdb_tcp -e 'SELECT 1' >/dev/null 2>&1; then
            fail "$name" "root@127.0.0.1 without password cannot connect over TCP on port $MARIADB_PORT"
            return 1
        fi
    fi
    # Only when it is missing: a CREATE DATABASE IF NOT EXISTS is written to the binlog even when the database
    # exists, and a CDC test on the other worker (test_resume runs this script) would read it as its own.
    if [[ "$(mdb_tcp -e "SELECT 1 FROM information_schema.schemata WHERE schema_name = '$DB'")" != 1 ]]; then
        mdb_tcp -e "CREATE DATABASE $DB" || { fail "$name" "CREATE DATABASE $DB failed"; return 1; }
    fi
    local log_bin
    log_bin="$(mdb_tcp -e "SELECT @@log_bin" 2>/dev/null)"
    if [[ "$log_bin" != 1 ]]; then
        fail "$name" "log_bin is not ON (got '$log_bin')"
        return 1
    fi
    ok "$name" "127.0.0.1:$MARIADB_PORT pid $pid, log_bin=ON binlog_format=ROW${tls_opt:+, TLS only}$started"
}

# ---------------------------------------------------------------------------------------------------
# PostgreSQL (the machine's cluster)
PG_PASSWORD=""
pg_ready() {
    if command -v pg_isready >/dev/null 2>&1; then
        pg_isready -q -h 127.0.0.1 -p "$PG_PORT" -t 2
    else
        port_open "$PG_PORT"
    fi
}
pg_psql() {  # pg_psql PASSWORD DBNAME SQL
    if [[ -n "$1" ]]; then
        PGPASSWORD="$1" PGPASSFILE="$SVC/no-such-pgpass" psql -X -A -t -q -w -h 127.0.0.1 -p "$PG_PORT" -U postgres -d "$2" -c "$3"
    else
        env -u PGPASSWORD PGPASSFILE="$SVC/no-such-pgpass" psql -X -A -t -q -w -h 127.0.0.1 -p "$PG_PORT" -U postgres -d "$2" -c "$3"
    fi
}

start_postgres() {
    local started="" t0=$(now_us)
    if ! command -v psql >/dev/null 2>&1; then
        fail postgres "psql not found (PostgreSQL not installed?): run \`make setup\`"
        return 1
    fi
    if ! pg_ready; then
        # the cluster configured for this port (pg_lsclusters), else the newest version's "main"
        local ver="" name="main"
        if command -v pg_lsclusters >/dev/null 2>&1; then
            read -r ver name < <(pg_lsclusters -h 2>/dev/null | awk -v p="$PG_PORT" '$3 == p {print $1, $2; exit}')
        fi
        if [[ -z "$ver" ]]; then
            ver="$(ls /etc/postgresql 2>/dev/null | sort -V | tail -n1)"
            name="main"
        fi
        if [[ -z "$ver" ]] || ! command -v pg_ctlcluster >/dev/null 2>&1; then
            fail postgres "nothing answers on 127.0.0.1:$PG_PORT and no cluster in /etc/postgresql: run \`make setup\`"
            return 1
        fi
        if ! pg_ctlcluster --skip-systemctl-redirect "$ver" "$name" start >"$SVC/postgres-start.log" 2>&1 9>&-; then
            # "already running" is fine (it may listen on another port, caught below)
            grep -qi 'already running' "$SVC/postgres-start.log" || {
                fail postgres "pg_ctlcluster $ver $name start failed"; tail_log "$SVC/postgres-start.log"; return 1; }
        fi
        local deadline=$((SECONDS + WAIT))
        until pg_ready; do
            if ((SECONDS >= deadline)); then
                fail postgres "PostgreSQL $ver/$name does not answer on 127.0.0.1:$PG_PORT after ${WAIT}s"
                tail_log "/var/log/postgresql/postgresql-$ver-$name.log"
                return 1
            fi
            sleep 0.2
        done
        started=" (started cluster $ver/$name, $(elapsed "$t0")s)"
    fi

    if pg_psql "" postgres 'SELECT 1' >/dev/null 2>&1; then
        PG_PASSWORD=""
    elif pg_psql postgres postgres 'SELECT 1' >/dev/null 2>&1; then
        PG_PASSWORD="postgres"
    elif [[ "$(id -u)" -eq 0 ]]; then
        # fresh Debian: host 127.0.0.1 is scram-sha-256 -> give role postgres a known password (peer auth)
        su -s /bin/sh postgres -c "psql -X -q -p $PG_PORT -c \"ALTER ROLE postgres PASSWORD 'postgres'\"" \
            >/dev/null 2>&1
        if pg_psql postgres postgres 'SELECT 1' >/dev/null 2>&1; then
            PG_PASSWORD="postgres"
        else
            fail postgres "cannot log in as postgres over TCP on 127.0.0.1:$PG_PORT (even after setting a password)"
            return 1
        fi
    else
        fail postgres "cannot log in as postgres over TCP on 127.0.0.1:$PG_PORT (run as root once to set a password)"
        return 1
    fi

    if [[ "$(pg_psql "$PG_PASSWORD" postgres "SELECT 1 FROM pg_database WHERE datname = '$DB'")" != 1 ]]; then
        pg_psql "$PG_PASSWORD" postgres "CREATE DATABASE $DB" >/dev/null || {
            fail postgres "CREATE DATABASE $DB failed"; return 1; }
    fi
    local auth="trust"
    [[ -n "$PG_PASSWORD" ]] && auth="password"
    ok postgres "127.0.0.1:$PG_PORT (machine's cluster, $auth auth)$started"
}

# ---------------------------------------------------------------------------------------------------
# moto S3 server
MOTO_PIDF="$SVC/moto.pid"
MOTO_LOG="$SVC/moto.log"
http_answers() {  # any HTTP response (even 4xx/5xx) counts
    if command -v curl >/dev/null 2>&1; then
        curl -s -o /dev/null --max-time 2 "$1"
    else
        "$PY" -c 'import sys, urllib.request, urllib.error
try: urllib.request.urlopen(sys.argv[1], timeout=2)
except urllib.error.HTTPError: pass' "$1" 2>/dev/null
    fi
}

start_moto() {
    local pid started="" t0=$(now_us) url="http://127.0.0.1:$S3_PORT"
    if [[ ! -x "$ROOT/.venv/bin/moto_server" ]]; then
        fail s3 "$ROOT/.venv/bin/moto_server missing: run \`make setup\`"
        return 1
    fi
    if ! pid="$(pid_of "$MOTO_PIDF" moto_server "-p $S3_PORT ")"; then
        if pid="$(pid_of "$MOTO_PIDF" moto_server)"; then
            fail s3 "moto_server pid $pid runs on another port than $S3_PORT: run tests/services/down.sh first"
            return 1
        fi
        if port_open "$S3_PORT"; then
            fail s3 "port $S3_PORT is already used by another process (set LAKECONNECT_S3_PORT)"
            return 1
        fi
        nohup "$ROOT/.venv/bin/moto_server" -H 127.0.0.1 -p "$S3_PORT" </dev/null >>"$MOTO_LOG" 2>&1 9>&- &
        pid=$!
        echo "$pid" >"$MOTO_PIDF"
        started=" (started"
    fi
    local deadline=$((SECONDS + WAIT))
    until http_answers "$url/"; do
        if ! kill -0 "$pid" 2>/dev/null; then
            fail s3 "moto_server (pid $pid) exited"; tail_log "$MOTO_LOG"; return 1
        fi
        if ((SECONDS >= deadline)); then
            fail s3 "moto_server (pid $pid) does not answer on $url after ${WAIT}s"; tail_log "$MOTO_LOG"; return 1
        fi
        sleep 0.2
    done
    [[ -n "$started" ]] && started="$started, ready in $(elapsed "$t0")s)"
    ok s3 "$url pid $pid (moto_server)$started"
}

# ---------------------------------------------------------------------------------------------------
# A real Apache Kafka broker (KRaft; tests/services/kafka_broker.py writes its settings and checks it)
K_DIR="$SVC/kafka"
K_PIDF="$K_DIR/kafka.pid"
K_BOOT="$K_DIR/bootstrap"
K_LOG="$K_DIR/kafka.log"
K_JARS="${LAKECONNECT_JARS:-$ROOT/.jars}/broker"
KAFKA_BOOTSTRAP=""

start_kafka() {
    local pid started="" t0=$(now_us)
    mkdir -p "$K_DIR"
    if ! pid="$(pid_of "$K_PIDF" kafka.Kafka "$K_DIR/server.properties")" || [[ ! -s "$K_BOOT" ]]; then
        if pid="$(pid_of "$K_PIDF" kafka.Kafka)"; then
            fail kafka "broker pid $pid lost its bootstrap file: run tests/services/down.sh first"
            return 1
        fi
        if ! ls "$K_JARS"/kafka_2.13-*.jar >/dev/null 2>&1; then
            fail kafka "no Kafka jars in ${K_JARS#"$ROOT"/}: run \`make setup\` (it fetches them with Maven)"
            return 1
        fi
        rm -f "$K_PIDF" "$K_BOOT"
        if ! "$PY" "$HERE/kafka_broker.py" prepare --dir "$K_DIR" --jars "$K_JARS" --port "$KAFKA_PORT" \
                >"$K_BOOT.tmp" 2>"$K_LOG"; then
            fail kafka "formatting the broker's log dir failed"; tail_log "$K_LOG"; return 1
        fi
        nohup java -Xms128m -Xmx768m -XX:+UseSerialGC -Xshare:auto \
            -Dlog4j2.configurationFile="$K_DIR/log4j2.properties" -cp "$K_JARS/*" \
            kafka.Kafka "$K_DIR/server.properties" </dev/null >>"$K_LOG" 2>&1 9>&- &
        pid=$!
        echo "$pid" >"$K_PIDF"
        mv "$K_BOOT.tmp" "$K_BOOT"
        started=" (started"
        local deadline=$((SECONDS + WAIT)) port
        port="$(cut -d: -f2 "$K_BOOT")"
        until port_open "$port"; do
            if ! kill -0 "$pid" 2>/dev/null; then
                fail kafka "the broker (pid $pid) exited during start-up"; tail_log "$K_LOG"; return 1
            fi
            if ((SECONDS >= deadline)); then
                fail kafka "the broker (pid $pid) does not listen on port $port after ${WAIT}s"
                tail_log "$K_LOG"; kill "$pid" 2>/dev/null; return 1
            fi
            sleep 0.2
        done
    fi
    KAFKA_BOOTSTRAP="$(cat "$K_BOOT")"
    # shellcheck disable=SC2086
    if ! timeout $((WAIT + 10)) "$PY" "$HERE/kafka_broker.py" check --bootstrap "$KAFKA_BOOTSTRAP" \
            --timeout "$WAIT" $KAFKA_TOPICS 2>>"$K_LOG"; then
        fail kafka "topic creation or produce/consume round trip failed on $KAFKA_BOOTSTRAP"
        tail_log "$K_LOG"
        return 1
    fi
    [[ -n "$started" ]] && started="$started, ready in $(elapsed "$t0")s)"
    ok kafka "$KAFKA_BOOTSTRAP pid $pid (Apache Kafka $(basename "$K_JARS"/kafka_2.13-*.jar .jar | sed 's/kafka_2.13-//'), KRaft, round trip OK)$started"
}

# ---------------------------------------------------------------------------------------------------
for ((k = 1; k <= MARIADB_INSTANCES; k++)); do
    start_mariadb "$k"
done
make_tls && start_mariadb tls
start_postgres
start_moto
start_kafka

ENV_FILE="$SVC/services.env"
if ((${#failures[@]})); then
    rm -f "$ENV_FILE"
    echo "up.sh: FAILED: ${failures[*]} (see messages above; stop what did start with tests/services/down.sh)" >&2
    exit 1
fi

pg_auth="postgres"
[[ -n "$PG_PASSWORD" ]] && pg_auth="postgres:$PG_PASSWORD"
cat >"$ENV_FILE.tmp" <<EOF
# written by tests/services/up.sh on $(date -u +%Y-%m-%dT%H:%M:%SZ); removed by tests/services/down.sh
LAKECONNECT_TEST_MARIADB_URL=mysql+pymysql://root@127.0.0.1:$MARIADB_PORT/$DB
LAKECONNECT_TEST_MARIADB_JDBC=jdbc:mysql://127.0.0.1:$MARIADB_PORT/$DB
LAKECONNECT_TEST_MARIADB_HOST=127.0.0.1
LAKECONNECT_TEST_MARIADB_PORT=$MARIADB_PORT
LAKECONNECT_TEST_MARIADB_USER=root
LAKECONNECT_TEST_MARIADB_PASSWORD=
LAKECONNECT_TEST_MARIADB_DATABASE=$DB
LAKECONNECT_TEST_MARIADB_SOCKET=$(mdb_socket "$(mdb_dir 1)")
LAKECONNECT_TEST_MARIADB_TLS_PORT=$MARIADB_TLS_PORT
LAKECONNECT_TEST_TLS_DIR=$TLS_DIR
LAKECONNECT_TEST_MARIADB_PORTS=$(for ((k = 1; k <= MARIADB_INSTANCES; k++)); do printf '%s ' $((MARIADB_PORT + k - 1)); done)
LAKECONNECT_TEST_MARIADB_SOCKETS=$(for ((k = 1; k <= MARIADB_INSTANCES; k++)); do printf '%s ' "$(mdb_socket "$(mdb_dir "$k")")"; done)
LAKECONNECT_TEST_POSTGRES_URL=postgresql+psycopg://$pg_auth@127.0.0.1:$PG_PORT/$DB
LAKECONNECT_TEST_POSTGRES_JDBC=jdbc:postgresql://127.0.0.1:$PG_PORT/$DB
LAKECONNECT_TEST_POSTGRES_HOST=127.0.0.1
LAKECONNECT_TEST_POSTGRES_PORT=$PG_PORT
LAKECONNECT_TEST_POSTGRES_USER=postgres
LAKECONNECT_TEST_POSTGRES_PASSWORD=$PG_PASSWORD
LAKECONNECT_TEST_POSTGRES_DATABASE=$DB
LAKECONNECT_TEST_S3_ENDPOINT=http://127.0.0.1:$S3_PORT
LAKECONNECT_TEST_KAFKA_BOOTSTRAP=$KAFKA_BOOTSTRAP
EOF
mv "$ENV_FILE.tmp" "$ENV_FILE"
echo "up.sh: all services up in $(elapsed "$START_TS")s; addresses in ${ENV_FILE#"$ROOT"/}"
