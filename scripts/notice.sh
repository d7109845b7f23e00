#!/usr/bin/env bash
# Writes NOTICE: the third-party modules linked into bin/kudurru and their
# licences, read from each module's licence file in the module cache.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH=/usr/local/go/bin:$PATH
{
  echo "kudurru"
  echo "Copyright the kudurru authors."
  echo
  echo "The kudurru binary links the following third-party Go modules. Each is"
  echo "used under its licence, whose name is given; the full texts are in each"
  echo "module's source at the version listed."
  echo
  go list -deps -f '{{with .Module}}{{if not .Main}}{{.Path}} {{.Version}} {{.Dir}}{{end}}{{end}}' ./cmd/kudurru |
    sort -u | while read -r path version dir; do
      lic=$(ls "$dir" 2>/dev/null | grep -iE '^(licen[cs]e|copying)(\.md|\.txt)?$' | head -1 || true)
      kind="see module source"
      if [ -n "$lic" ]; then
        f="$dir/$lic"
        if grep -q "Mozilla Public License" "$f"; then kind="MPL-2.0"
        elif grep -q "Apache License" "$f"; then kind="Apache-2.0"
        elif grep -qi "Permission is hereby granted, free of charge" "$f"; then kind="MIT"
        elif grep -qi "Neither the name" "$f"; then kind="BSD-3-Clause"
        elif grep -qi "Redistribution and use" "$f"; then kind="BSD-2-Clause"
        elif grep -qi "ISC" "$f"; then kind="ISC"
        fi
      fi
      printf '%-55s %-40s %s\n' "$path" "$version" "$kind"
    done
  echo
  echo "Go standard library: BSD-3-Clause, Copyright The Go Authors."
} > NOTICE
echo "wrote NOTICE ($(grep -c ' v' NOTICE) modules)"
