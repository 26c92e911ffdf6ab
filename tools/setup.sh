#!/usr/bin/env bash
# Installs what the workbook needs, only when it is missing: the C toolchain,
# cmocka and OpenSSL's headers, bubblewrap (the grader's sandbox) from apt
# (through sudo when not root), and a .venv with NumPy for the harness (and, with --mutants,
# universalmutator for `make mutants`, `mutants-uopc` and `mutants-ci`; with --plot, matplotlib
# for the figure of `make bench` and `make lab-23.5-plot`; with --figures, Debian's graphviz for
# `make figures`; with --coverage, gcovr for `make coverage-uopc`).
# CUDA is optional and never installed here.
set -euo pipefail
cd "$(dirname "$0")/.."

missing=()
command -v gcc >/dev/null || missing+=(gcc)
command -v make >/dev/null || missing+=(make)
[ -f /usr/include/cmocka.h ] || missing+=(libcmocka-dev)
[ -f /usr/include/openssl/evp.h ] || missing+=(libssl-dev)
command -v bwrap >/dev/null || missing+=(bubblewrap)
command -v python3 >/dev/null || missing+=(python3)
python3 -c 'import ensurepip, venv' 2>/dev/null || missing+=(python3-venv)

if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]} with apt-get"
  sudo=""
  [ "$(id -u)" = 0 ] || sudo=sudo
  $sudo apt-get update -qq
  $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
fi

if ! .venv/bin/python -c 'import numpy' 2>/dev/null; then
  echo "setup: creating .venv with NumPy (harness/requirements.txt)"
  python3 -m venv .venv
  .venv/bin/pip install -q --disable-pip-version-check -r harness/requirements.txt
fi

# The mutation tool of `make mutants` tests the reference: only the mutants targets ask for it
# (tools/setup.sh --mutants), so `make lab-23`, `make test` and a fresh clone's set-up never wait for it.
if [ "${1:-}" = --mutants ] && ! .venv/bin/python -c 'import universalmutator' 2>/dev/null; then
  echo "setup: installing universalmutator into .venv (tools/requirements.txt)"
  .venv/bin/pip install -q --disable-pip-version-check -r tools/requirements.txt
fi

# The latency figure of `make bench` and `make lab-23.5-plot` needs matplotlib; only those
# targets ask for it (tools/setup.sh --plot), so a lab or the grader never waits for it.
if [ "${1:-}" = --plot ] && ! .venv/bin/python -c 'import matplotlib' 2>/dev/null; then
  echo "setup: installing matplotlib into .venv (bench/requirements.txt)"
  .venv/bin/pip install -q --disable-pip-version-check -r bench/requirements.txt
fi

# `make coverage-uopc` reads gcov's counters through gcovr; only it asks (tools/setup.sh --coverage).
if [ "${1:-}" = --coverage ] && ! .venv/bin/python -c 'import gcovr' 2>/dev/null; then
  echo "setup: installing gcovr into .venv (tools/coverage-requirements.txt)"
  .venv/bin/pip install -q --disable-pip-version-check -r tools/coverage-requirements.txt
fi

# The chapters' figures are committed as SVG; only `make figures`, which renders them again
# from their .dot sources, needs Graphviz (tools/setup.sh --figures).
if [ "${1:-}" = --figures ] && ! command -v dot >/dev/null; then
  echo "setup: installing graphviz with apt-get (make figures)"
  sudo=""
  [ "$(id -u)" = 0 ] || sudo=sudo
  $sudo apt-get update -qq
  $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq graphviz >/dev/null
fi
