#!/usr/bin/env bash
# Installs Debian packages when the command that shows them is missing.
# Usage: ensure-deps.sh command:package [command:package ...]
set -euo pipefail
missing=()
for pair in "$@"; do
  cmd=${pair%%:*} pkg=${pair#*:}
  if ! command -v "$cmd" >/dev/null 2>&1 && [ ! -x "/usr/sbin/$cmd" ]; then
    missing+=("$pkg")
  fi
done
[ ${#missing[@]} -eq 0 ] && exit 0
if [ "$(id -u)" -ne 0 ]; then
  echo "missing Debian packages: ${missing[*]} (run as root, or: sudo apt-get install ${missing[*]})" >&2
  exit 1
fi
echo "installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
# Packaged daemons are not wanted running: tests start their own copies.
for svc in nsd unbound knot-resolver kresd@1; do
  systemctl disable --now "$svc" >/dev/null 2>&1 || true
done
