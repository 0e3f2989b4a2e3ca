#!/usr/bin/env bash
# tests/services/fetch_jars.sh -- the Java artifacts of the test bed, fetched with Maven (`make setup`).
#
#   .jars/broker       Apache Kafka 4.x (KRaft broker + controller), started by up.sh, and its console tools
#   .jars/connect      Kafka Connect's runtime, transforms, JSON/String/number converters and FileStream
#                      connectors: the class path of the oracle harness (tests/oracle/java) and of Kafka
#                      Connect standalone with current Debezium
#   .jars/debezium23   Debezium's MySQL connector 2.3 with the Kafka Connect 3.5 it was built for
#   .jars/debezium3    Debezium 3.x's MariaDB connector (a plugin directory for .jars/connect)
#   .jars/spark-avro   Spark's Avro functions, which the AvroConverter uses (ingest/spark.py adds the jar)
#   with --bench:
#   .jars/bench        Spark's own Kafka source/sink and hadoop-aws (s3a) for tests/bench/
#
# The poms are under tests/services/maven/. Maven's own repository (~/.m2) is the download cache; a
# stamp (the poms' hash) makes a second run do nothing at all, not even start Maven. Nothing binary is
# committed. A failed fetch names what could not be had and what still works without it; exit 1.
# $LAKECONNECT_MAVEN_ARGS goes to Maven as it is (e.g. `-s settings.xml` for a mirror or a proxy).
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
    echo broker connect debezium23 debezium3 spark-avro
    ((${#PROFILE[@]})) && echo bench
    return 0
}

wanted() {  # group:artifact:version of what the modules' poms declare
    local m
    for m in "$@"; do
        sed -n 's|.*<groupId>\([^<]*\)</groupId><artifactId>\([^<]*\)</artifactId><version>\([^<]*\)</version>.*|\1:\2:\3|p' \
            "$POMS/$m/pom.xml"
    done | sed "s/\${kafka.version}/$(sed -n 's|.*<kafka.version>\(.*\)</kafka.version>.*|\1|p' "$POMS/pom.xml")/" \
         | grep -v -e log4j -e slf4j -e io.lakeconnect | sort -u | tr '\n' ' ' | sed 's/ $//'
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
# shellcheck disable=SC2086
if ! (cd "$POMS" && mvn -B -ntp ${LAKECONNECT_MAVEN_ARGS:-} "${PROFILE[@]}" -pl "$pl" dependency:copy-dependencies \
        -DincludeScope=runtime -DoutputDirectory="$JARS/.incoming/\${project.artifactId}" >"$log" 2>&1); then
    echo "setup: Maven could not fetch the $WHAT Java artifacts: $(wanted "${todo[@]}")" >&2
    echo "       Maven said (the whole log is $log):" >&2
    { grep -m1 -E '^\[ERROR\] .{10,}' "$log"
      grep -m2 -E 'Could not (transfer|resolve|find)|Connect(ion)? (to|refused)|Unknown host|timed out' "$log"
    } | sed -e 's/\x1b\[[0-9;]*m//g' -e 's/^/         /' | cut -c1-400 >&2
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
