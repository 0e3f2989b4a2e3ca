#!/usr/bin/env bash
# tests/services/fetch_jars.sh -- the Java artifacts of the test bed, fetched with Maven (`make setup`).
#
#   .jars/broker       Apache Kafka 4.x (KRaft broker + controller), started by up.sh
#   .jars/connect      Kafka Connect's runtime, transforms, JSON/String/number converters and FileStream
#                      connectors: the class path of the oracle harness (tests/oracle/java) and of Kafka
#                      Connect standalone with current Debezium
#   .jars/debezium23   Debezium's MySQL connector 2.3 with the Kafka Connect 3.5 it was built for
#   .jars/debezium3    Debezium 3.x's MariaDB connector (a plugin directory for .jars/connect)
#   with --bench:
#   .jars/bench        Spark's own Kafka source/sink and hadoop-aws (s3a) for tests/bench/
#
# The poms are under tests/services/maven/. Maven's own repository (~/.m2) is the download cache; a
# stamp (the poms' hash) makes a second run do nothing at all, not even start Maven. Nothing binary is
# committed. A failed fetch names what could not be had and what still works without it; exit 1.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
POMS="$ROOT/tests/services/maven"
JARS="${LAKECONNECT_JARS:-$ROOT/.jars}"
PROFILE=()
WHAT="test bed's"
WITHOUT="the tests that need a real Kafka broker, Kafka Connect or Debezium do not (up.sh cannot start the broker)"
if [[ "${1:-}" == "--bench" ]]; then
    PROFILE=(-P bench)
    WHAT="benchmarks'"
    WITHOUT="the tests too; only the benchmarks' Spark Kafka and s3a baselines cannot run"
fi

modules() {  # the modules this run fetches
    echo broker connect debezium23 debezium3
    ((${#PROFILE[@]})) && echo bench
    return 0
}

stamp_of() {
    { cat "$POMS/pom.xml" "$POMS/$1/pom.xml"; java -version 2>&1 | head -n1; } | sha256sum | cut -d' ' -f1
}

todo=()
for m in $(modules); do
    if [[ ! -f "$JARS/$m/.stamp" || "$(cat "$JARS/$m/.stamp")" != "$(stamp_of "$m")" ]]; then
        todo+=("$m")
    fi
done
if ((${#todo[@]} == 0)); then
    echo "setup: the $WHAT Java artifacts present in ${JARS#"$ROOT"/}/ ($(modules | tr '\n' ' ' | sed 's/ $//'))"
    exit 0
fi

if ! command -v mvn >/dev/null 2>&1; then
    echo "setup: mvn not found: the $WHAT Java artifacts (${todo[*]}) cannot be fetched." >&2
    echo "       Install Maven (apt-get install -y maven). \`make demo\` works without them; the tests need them." >&2
    exit 1
fi

echo "setup: fetching the $WHAT Java artifacts with Maven: ${todo[*]}"
log="$JARS/maven.log"
mkdir -p "$JARS"
pl="$(IFS=,; echo "${todo[*]}")"
# One Maven run for every module; each module's jars go to a temporary directory, moved in place whole.
if ! (cd "$POMS" && mvn -B -ntp "${PROFILE[@]}" -pl "$pl" dependency:copy-dependencies \
        -DincludeScope=runtime -DoutputDirectory="$JARS/.incoming/\${project.artifactId}" >"$log" 2>&1); then
    echo "setup: Maven could not fetch the $WHAT Java artifacts; from $log:" >&2
    grep -E 'Could not (find|resolve|transfer)|Failed to (execute|read|collect)|Non-parseable|Unknown host|Connection' "$log" \
        | sed 's/\x1b\[[0-9;]*m//g' | head -n 5 >&2 || tail -n 10 "$log" >&2
    echo "       Without them: \`make demo\` and lakeconnect itself work; $WITHOUT." >&2
    echo "       Check that Maven Central is reachable (a proxy in ~/.m2/settings.xml?) and run this again." >&2
    exit 1
fi
for m in "${todo[@]}"; do
    rm -rf "$JARS/$m"
    mv "$JARS/.incoming/$m" "$JARS/$m"
    stamp_of "$m" >"$JARS/$m/.stamp"
done
rmdir "$JARS/.incoming" 2>/dev/null || true
echo "setup: Java artifacts in ${JARS#"$ROOT"/}/: $(for m in "${todo[@]}"; do printf '%s (%s) ' "$m" "$(du -sh "$JARS/$m" | cut -f1)"; done)"
