#!/usr/bin/env bash
# tests/oracle/build.sh -- compiles the oracle harness (tests/oracle/java) into .jars/oracle/oracle.jar
# against Kafka Connect's jars in .jars/connect (fetched by tests/services/fetch_jars.sh). Run by `make setup`.
# A stamp (hash of the sources, the class path's jar names and javac's version) makes a second run do nothing.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
JARS="${LAKECONNECT_JARS:-$ROOT/.jars}"
SRC="$ROOT/tests/oracle/java/src"
OUT="$JARS/oracle"
JAR="$OUT/oracle.jar"

if ! compgen -G "$JARS/connect/connect-transforms-*.jar" >/dev/null; then
    echo "setup: $JARS/connect has no Kafka Connect jars: run tests/services/fetch_jars.sh first" >&2
    exit 1
fi

stamp="$( { find "$SRC" -name '*.java' -print0 | sort -z | xargs -0 cat; ls "$JARS/connect"; javac -version 2>&1; } \
    | sha256sum | cut -d' ' -f1)"
if [[ -f "$JAR" && -f "$OUT/.stamp" && "$(cat "$OUT/.stamp")" == "$stamp" ]]; then
    echo "setup: oracle harness up to date (${JAR#"$ROOT"/})"
    exit 0
fi

echo "setup: compiling the oracle harness into ${JAR#"$ROOT"/}"
build="$(mktemp -d)"
trap 'rm -rf "$build"' EXIT
find "$SRC" -name '*.java' -print0 | xargs -0 javac --release 17 -nowarn -d "$build/classes" -cp "$JARS/connect/*"
mkdir -p "$OUT"
jar --create --file "$JAR.tmp" -C "$build/classes" .
mv "$JAR.tmp" "$JAR"
echo "$stamp" >"$OUT/.stamp"
