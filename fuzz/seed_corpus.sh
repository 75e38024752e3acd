#!/usr/bin/env bash
# Seed the (git-ignored) libFuzzer corpora from the shared real-world reports.
# summarize: byte 0 = budgets selector (0 = defaults), then the report.
# rules: two budget bytes, then the text (the reports double as traceback-ish text).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
src="${1:-$here/../../shared/corpus}"
mkdir -p "$here/corpus/summarize" "$here/corpus/rules"
n=0
while IFS= read -r -d '' f; do
    name="$(sha1sum "$f" | cut -c1-16)"
    { printf '\x00'; cat "$f"; } > "$here/corpus/summarize/$name"
    { printf '\x07\x30'; head -c 65536 "$f"; } > "$here/corpus/rules/$name"
    n=$((n + 1))
done < <(find "$src" -type f -print0)
# The repository's own example reports.
for f in "$here"/../examples/reports/*; do
    { printf '\x00'; cat "$f"; } > "$here/corpus/summarize/example-$(basename "$f")"
done
echo "seeded $n files from $src into $here/corpus/{summarize,rules}"
