#!/usr/bin/env bash
# make doctor: what this machine has for the workbook, and what is missing.
cd "$(dirname "$0")/.."
line() { printf '%-22s %s\n' "$1" "$2"; }
first() { "$@" 2>/dev/null | head -n 1; }

line gcc "$(first gcc --version || echo 'MISSING: apt-get install gcc')"
nvcc=$(command -v nvcc || ls /usr/local/cuda/bin/nvcc 2>/dev/null)
line nvcc "${nvcc:+$nvcc: }$( [ -n "$nvcc" ] && "$nvcc" --version | tail -n 1 || echo 'not found (optional: CUDA paths are skipped)')"
nvrtc=$(ls /usr/local/cuda/lib64/libnvrtc.so* 2>/dev/null | head -n 1; ldconfig -p 2>/dev/null | awk '/libnvrtc\.so/ {print $NF; exit}')
line NVRTC "$(echo "$nvrtc" | head -n 1 | grep . || echo 'not found (optional: nvcc is used instead)')"
driver=$(ldconfig -p 2>/dev/null | awk '/libcuda\.so\.1/ {print $NF; exit}')
line "CUDA driver" "${driver:-not found (no GPU execution; CUDA source is still compiled where a compiler exists)}"
if command -v nvidia-smi >/dev/null; then line GPU "$(first nvidia-smi -L)"; else line GPU "none detected"; fi
[ -f /usr/include/cmocka.h ] && cm=$(dpkg-query -W -f='${Version}' libcmocka-dev 2>/dev/null) && line cmocka "libcmocka-dev $cm" \
  || line cmocka "MISSING: apt-get install libcmocka-dev (make test installs it)"
[ -f /usr/include/openssl/evp.h ] && line OpenSSL "$(first openssl version || echo 'headers present')" \
  || line OpenSSL "MISSING: apt-get install libssl-dev (make test installs it)"
line python3 "$(first python3 --version || echo MISSING)"
if [ -x .venv/bin/python ]; then
  line NumPy "$(.venv/bin/python -c 'import numpy; print(numpy.__version__)' 2>/dev/null || echo 'MISSING in .venv')"
else
  line NumPy ".venv missing (make test creates it)"
fi
cache=${UOPC_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/uopc}
# Without UOPC_CACHE_DIR the default directory is shared by every tree and run of this user.
shared=""
[ -n "${UOPC_CACHE_DIR:-}" ] || shared=", the default: shared by every tree and run of this user without UOPC_CACHE_DIR"
if [ -d "$cache" ]; then
  mode=$(stat -c '%a' "$cache"); owner=$(stat -c '%u' "$cache")
  if [ "$owner" != "$(id -u)" ] || [ $((8#$mode & 8#022)) -ne 0 ]; then
    line "cache directory" "$cache UNSAFE (mode $mode, owner uid $owner): chmod 700 it or set UOPC_CACHE_DIR"
  else
    line "cache directory" "$cache (mode $mode, owned by you: safe; $(ls "$cache" | grep -c -- '-') entries$shared)"
  fi
else
  line "cache directory" "$cache (not created yet; it will be made with mode 0700$shared)"
fi
# tensorjit's own answer (tj_is_available), from whichever build exists.
tj=""
for b in build/solutions build/labs; do [ -x "$b/bin/tj-available" ] && { tj="$b/bin/tj-available"; break; }; done
if [ -n "$tj" ]; then "$tj" || true
else line tensorjit "build first (make IMPL=solutions all): then this says whether the C and CUDA back ends can run"; fi
