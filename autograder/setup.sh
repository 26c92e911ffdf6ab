#!/usr/bin/env bash
# Gradescope setup (runs once, as root, in the image): the toolchain, bubblewrap (each build and
# test in its own sandbox; where the image forbids namespaces the grade says so and falls back),
# a NumPy venv outside the source tree (the student's code runs as uopc-student, which may run
# that Python but may not read /autograder/source: solutions/, tests/hidden/ and goldens/ stay
# the instructor's).
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq gcc make libcmocka-dev libssl-dev python3 python3-venv bubblewrap >/dev/null
python3 -m venv /opt/uopc-venv
/opt/uopc-venv/bin/pip install -q --disable-pip-version-check -r /autograder/source/harness/requirements.txt
ln -sfn /opt/uopc-venv /autograder/source/.venv
id uopc-student >/dev/null 2>&1 || useradd --system --no-create-home --shell /usr/sbin/nologin uopc-student
chmod 0700 /autograder/source
# A first grade of the reference proves the image works and warms nothing the grade relies on.
cd /autograder/source && /opt/uopc-venv/bin/python -m harness.grade --impl solutions --seed 1 --run-as uopc-student \
  | grep -E '^(sandbox|limits|Total|[0-9]+ passed)'

