#!/usr/bin/env bash
# tests/services/setup.sh -- machine set-up for lakeconnect (run by `make setup`).
#
# 1. Debian packages: checks with dpkg-query which of the packages below are missing; as root it runs
#    `apt-get update` + `apt-get install -y` for the missing ones only (a machine that has them all does no
#    apt work at all); not root -> prints what is missing and exits 1.
# 2. Python: creates .venv (python3 -m venv) if absent and installs `-e '.[test,airflow,notebooks]'` into it
#    with uv (pip-installed from PyPI into the venv; pip itself if that fails)
#    (Airflow 3 for dags/ and tests/dags: it installs beside pyspark with no conflict; ~35 s more; Jupyter's
#    kernel and nbclient for the notebooks and tests/notebooks).
#    The install is skipped when a stamp (hash of pyproject.toml + the extras + python version) says it ran.
#    Set LAKECONNECT_FORCE_PIP=1 to force it.
# 3. Compiles lakeconnect's Java functions (ingest/jvm).
# 4. Fetches the test bed's Java artifacts with Maven (tests/services/fetch_jars.sh): a real Kafka broker,
#    Kafka Connect and Debezium. `make demo` needs none of them.
# 5. Compiles the transforms/converters oracle harness (tests/oracle/build.sh) against step 4's jars.
# With --base (what `make demo` runs), steps 1-3 only, and no Maven package: the demo needs none of step 4.
# With --bench, for tests/bench/: step 4 also fetches the benchmarks' jars (`fetch_jars.sh --bench`), and
# 6. creates .venv-dlt, a virtualenv of its own for the dlt baseline (tests/bench/dlt_baseline.py): dlt with
#    its Delta writer (deltalake), connectorx, SQLAlchemy and PyMySQL, pip-installed from PyPI. Kept out of
#    .venv so that dlt's pyarrow/deltalake ranges never move lakeconnect's; skipped when its stamp matches.
# Idempotent; takes well under a second when everything is present.
set -euo pipefail

BASE=0
BENCH=0
[[ "${1:-}" == "--base" ]] && BASE=1
[[ "${1:-}" == "--bench" ]] && BENCH=1

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$ROOT"

# A first setup writes about 3 GB (.venv 1.9 GB, uv's cache, the Java artifacts), and the tests their lakes
# and logs: say so up front rather than leave a full disk to a step's "No space left on device".
free_kb="$(df -Pk "$ROOT" 2>/dev/null | awk 'NR == 2 {print $4}')"
if [[ "$free_kb" =~ ^[0-9]+$ ]] && ((free_kb < 4 * 1024 * 1024)); then
    echo "setup: warning: only $((free_kb / 1024)) MB free on the disk holding $ROOT; setting up and running" \
        "the tests needs about 4 GB: free some first if a step below fails with 'No space left on device'" >&2
fi

PACKAGES=(
    openjdk-17-jdk-headless
    mariadb-server
    mariadb-client
    postgresql
    libmariadb-java
    libpostgresql-jdbc-java
    libxerial-sqlite-jdbc-java
    sqlite3
)
((BASE)) || PACKAGES+=(maven)  # step 4

# --- 1. Debian packages ------------------------------------------------------------------------------
if ! command -v dpkg-query >/dev/null 2>&1; then
    echo "setup: dpkg-query not found: this script expects Debian/Ubuntu; install the equivalents of:" >&2
    echo "       ${PACKAGES[*]}" >&2
    exit 1
fi

missing=()
for pkg in "${PACKAGES[@]}"; do
    status="$(dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null || true)"
    [[ "$status" == "install ok installed" ]] || missing+=("$pkg")
done

if ((${#missing[@]})); then
    if [[ "$(id -u)" -ne 0 ]]; then
        echo "setup: missing Debian packages: ${missing[*]}" >&2
        echo "setup: not running as root, so they cannot be installed here; run as root:" >&2
        echo "       apt-get update && apt-get install -y ${missing[*]}" >&2
        exit 1
    fi
    echo "setup: installing Debian packages: ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq "${missing[@]}" >/dev/null
    echo "setup: Debian packages installed"
else
    echo "setup: Debian packages present"
fi

# --- 2. Python virtualenv ---------------------------------------------------------------------------
VENV="$ROOT/.venv"
if [[ ! -x "$VENV/bin/python" ]]; then
    echo "setup: creating $VENV"
    python3 -m venv "$VENV"
fi

EXTRAS="test,airflow,notebooks"
stamp_file="$VENV/.lakeconnect-install.stamp"
stamp="$( { cat pyproject.toml; echo "$EXTRAS compiled"; "$VENV/bin/python" -VV; } | sha256sum | cut -d' ' -f1)"
if [[ "${LAKECONNECT_FORCE_PIP:-0}" != 1 && -f "$stamp_file" && "$(cat "$stamp_file")" == "$stamp" ]]; then
    echo "setup: .venv up to date (pip install -e '.[$EXTRAS]' already done for this pyproject.toml)"
else
    log="$VENV/lakeconnect-pip-install.log"
    # uv (from PyPI, into the venv) resolves and installs the same packages, in parallel: a fresh install
    # took 34 s with it, 3.9 minutes with pip. pip does it when uv cannot be had. Both leave the modules
    # compiled (uv only when asked): where PYTHONDONTWRITEBYTECODE is set, no process ever writes a .pyc,
    # and each would compile pyspark, pandas or Airflow from source again (imports 4.4 s instead of 1.1).
    # pyspark comes from PyPI as a source archive, and uv unpacked and built it again for every new venv,
    # each time into a new entry of its cache (1.9 GB each) without dropping the last: 53 GB after a few
    # days of fresh clones here, until the disk was full and a setup failed. Pruning what no install can
    # reach any more, before the install and after it, keeps the cache at one build (2.8 GB) and the venvs
    # intact (their files are links).
    prune_uv_cache() {
        if [[ "${installer[0]}" == "$VENV/bin/uv" ]]; then
            "$VENV/bin/uv" cache prune >>"$log" 2>&1 || echo "setup: uv cache prune failed (see $log)" >&2
        fi
    }
    if "$VENV/bin/pip" install --disable-pip-version-check -q "uv>=0.5,<1" >"$log" 2>&1; then
        installer=("$VENV/bin/uv" pip install --compile-bytecode --python "$VENV/bin/python")
    else
        echo "setup: uv could not be installed from PyPI (see $log); installing with pip instead" >&2
        installer=("$VENV/bin/pip" install --disable-pip-version-check)
    fi
    prune_uv_cache
    echo "setup: ${installer[*]#"$ROOT"/} -e '.[$EXTRAS]'"
    if ! "${installer[@]}" -e ".[$EXTRAS]" >>"$log" 2>&1; then
        echo "setup: installing the Python packages failed; last lines of $log:" >&2
        tail -n 30 "$log" >&2
        exit 1
    fi
    echo "$stamp" >"$stamp_file"
    prune_uv_cache
    echo "setup: .venv ready"
fi

# --- 3. lakeconnect's Java functions (Kafka's partitioner inside Spark's generated code) -------------
"$VENV/bin/python" -m ingest.jvm

# --- 4. The test bed's Java artifacts (Kafka broker, Kafka Connect, Debezium), fetched with Maven -------
if ((BENCH)); then
    bash "$ROOT/tests/services/fetch_jars.sh" --bench
else
    ((BASE)) || bash "$ROOT/tests/services/fetch_jars.sh"
fi

# --- 5. The oracle harness: Kafka's own transforms and converters over the oracle corpus (tests/oracle) ---
((BASE)) || bash "$ROOT/tests/oracle/build.sh"

# --- 6. (--bench) The dlt baseline's own virtualenv ---------------------------------------------------
# pip compiles every module as it installs (PYTHONDONTWRITEBYTECODE would otherwise make each timed run of
# the baseline compile dlt again). pandas makes dlt's pyarrow backend faster, as dlt's docs say.
if ((BENCH)); then
    DLT_VENV="$ROOT/.venv-dlt"
    DLT_REQS=(
        "dlt[deltalake,sql_database]>=1.20,<2"
        "deltalake>=1.0,<2"
        "pyarrow>=17,<27"
        "connectorx>=0.4.2,<0.5"
        "sqlalchemy>=2.0,<3"
        "pymysql>=1.1,<2"
        "numpy>=1.26,<3"
        "pandas>=2.1,<3"
    )
    if [[ ! -x "$DLT_VENV/bin/python" ]]; then
        echo "setup: creating $DLT_VENV"
        python3 -m venv "$DLT_VENV"
    fi
    echo '*' >"$DLT_VENV/.gitignore"  # .gitignore names .venv/ only: keep the whole venv out of git status
    dlt_stamp_file="$DLT_VENV/.dlt-install.stamp"
    dlt_stamp="$( { printf '%s\n' "${DLT_REQS[@]}"; "$DLT_VENV/bin/python" -VV; } | sha256sum | cut -d' ' -f1)"
    dlt_version() { "$DLT_VENV/bin/python" -c 'import importlib.metadata as m; print("dlt", m.version("dlt"))'; }
    if [[ -f "$dlt_stamp_file" && "$(cat "$dlt_stamp_file")" == "$dlt_stamp" ]]; then
        echo "setup: .venv-dlt up to date ($(dlt_version))"
    else
        log="$DLT_VENV/dlt-pip-install.log"
        echo "setup: pip install into .venv-dlt: ${DLT_REQS[*]}"
        if ! "$DLT_VENV/bin/pip" install --disable-pip-version-check "${DLT_REQS[@]}" >"$log" 2>&1; then
            echo "setup: installing dlt into .venv-dlt failed; last lines of $log:" >&2
            tail -n 30 "$log" >&2
            exit 1
        fi
        echo "$dlt_stamp" >"$dlt_stamp_file"
        echo "setup: .venv-dlt ready ($(dlt_version))"
    fi
fi
