#!/usr/bin/env bash
# Install everything the tests need on a fresh Debian machine (Python 3.11+), then run the whole
# suite on SQLite, and the tests that reach the database (marker `db`) again on a real PostgreSQL
# server. Each pass prints its ten slowest tests and its time per folder.
#
#   bash scripts/test.sh            # everything
#   SKIP_SYSTEM=1 bash scripts/test.sh   # no apt-get, no services (use what is there)
#   SKIP_LLAMA=1 bash scripts/test.sh    # no llama-server build (the real-server tests skip)
#   OPTLOG_TEST_HOGS=2 bash scripts/test.sh   # two CPU hogs run alongside (no test may need an idle machine)
#
# As root it installs Debian packages (PostgreSQL, tmux, openssh-server, Slurm via
# ../shared/ci/slurm-up.sh when present) and starts the services; tests that need a service that
# is not there are skipped with the reason, so a non-root developer can still run the rest.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
# Every `optlog` process a test starts imports optlog and its libraries: with PYTHONDONTWRITEBYTECODE
# set (some images set it) each one compiles them again (~0.6 s a process on a 2-core machine).
unset PYTHONDONTWRITEBYTECODE
PY=${PYTHON:-python3}
JOBS=${OPTLOG_TEST_JOBS:-2}

log() { echo "test.sh: $*" >&2; }

if [ "${SKIP_SYSTEM:-0}" != 1 ] && [ "$(id -u)" = 0 ]; then
  need=()
  for pkg in git postgresql tmux openssh-server openssh-client; do
    dpkg -s "$pkg" >/dev/null 2>&1 || need+=("$pkg")
  done
  # Debian's own python3 has no venv/ensurepip without python3-venv.
  if ! "$PY" -c "import ensurepip, venv" >/dev/null 2>&1; then need+=(python3-venv); fi
  if [ ${#need[@]} -gt 0 ]; then
    log "installing ${need[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq "${need[@]}" >/dev/null
  fi
  # PostgreSQL: the Debian cluster, a password for the postgres role, TCP on 127.0.0.1.
  ver=$(ls /usr/lib/postgresql | sort -n | tail -1)
  if ! pg_lsclusters -h | grep -q "^$ver main"; then pg_createcluster "$ver" main >/dev/null; fi
  pg_ctlcluster "$ver" main start >/dev/null 2>&1 || true
  port=$(pg_lsclusters -h | awk -v v="$ver" '$1 == v && $2 == "main" {print $3}')
  for _ in $(seq 1 30); do pg_isready -q -h 127.0.0.1 -p "${port:-5432}" && break; sleep 1; done
  if ! pg_isready -q -h 127.0.0.1 -p "${port:-5432}"; then
    log "ERROR: PostgreSQL $ver did not start (pg_lsclusters: $(pg_lsclusters -h | tr '\n' ' '))"
    exit 1
  fi
  # The tests connect over TCP with a password (Debian's pg_hba: scram-sha-256 on 127.0.0.1).
  runuser -u postgres -- psql -q -p "${port:-5432}" -c "ALTER USER postgres PASSWORD 'postgres'" >/dev/null
  export OPTLOG_TEST_PG=${OPTLOG_TEST_PG:-postgresql://postgres:postgres@127.0.0.1:${port:-5432}/postgres}
  # Slurm (single node on localhost) for the Slurm executor tests.
  if [ -x ../shared/ci/slurm-up.sh ] || [ -f ../shared/ci/slurm-up.sh ]; then
    bash ../shared/ci/slurm-up.sh >/dev/null 2>&1 && export OPTLOG_TEST_SLURM=1 || log "slurm-up failed; Slurm tests will skip"
  fi
  # sshd on 127.0.0.1:2222 for the SSH executor tests (writes OPTLOG_TEST_SSH_HOST/PORT/USER/KEY).
  if bash scripts/sshd-up.sh >/dev/null 2>&1 && [ -f "${OPTLOG_SSHD_DIR:-/tmp/optlog-sshd}/env.sh" ]; then
    . "${OPTLOG_SSHD_DIR:-/tmp/optlog-sshd}/env.sh"
    export OPTLOG_TEST_SSH_HOST OPTLOG_TEST_SSH_PORT OPTLOG_TEST_SSH_USER OPTLOG_TEST_SSH_KEY
  else
    log "sshd-up failed; SSH executor tests will skip"
  fi
fi

if [ ! -x .venv/bin/python ]; then
  log "creating .venv"
  "$PY" -m venv .venv
fi
.venv/bin/python -m pip install -q --upgrade pip >/dev/null 2>&1 || log "pip self-upgrade skipped"
.venv/bin/python -m pip install -q -e '.[test]'
# Peer benchmark client for the test that runs one against the test server (tests/integration/test_peer_client.py).
# AIPerf pins rich~=14.1 (and older releases textual~=5.3), which conflicts with textual==8.2.8, so it
# lives in its own environment; GuideLLM would pull CUDA torch (~6 GB) instead of AIPerf's ~1.2 GB.
if [ ! -x .venv-peers/bin/aiperf ] && [ "${SKIP_PEERS:-0}" != 1 ]; then
  log "installing AIPerf into .venv-peers"
  "$PY" -m venv .venv-peers
  .venv-peers/bin/python -m pip install -q 'aiperf>=0.13,<0.14' || log "AIPerf install failed; the peer-client tests will skip"
fi

# A real inference server for tests/integration/test_realserver_*.py: llama.cpp's llama-server built from source
# (~6 minutes on 2 cores the first time, then cached under ~/.cache/optlog) and the Gemma 3 270M model.
# On CI (CI set) it must be there: a failed build fails the run, and the tests fail instead of skipping.
if [ "${SKIP_LLAMA:-0}" != 1 ]; then
  if llama_env=$(PYTHON=.venv/bin/python bash scripts/llama-server.sh --env); then
    eval "$llama_env"
    export OPTLOG_LLAMA_SERVER OPTLOG_TEST_MODEL
    log "llama-server: $OPTLOG_LLAMA_SERVER, model: $OPTLOG_TEST_MODEL"
  elif [ -n "${CI:-}" ]; then
    log "ERROR: llama-server could not be built or the model fetched (see above)"
    exit 1
  else
    log "llama-server unavailable; the real-server tests will skip"
  fi
  [ -z "${CI:-}" ] || export OPTLOG_TEST_REQUIRE_REALSERVER=1
fi

export PATH="$ROOT/.venv/bin:$PATH"

# For checking that no test depends on an idle machine: OPTLOG_TEST_HOGS=N starts N busy loops for
# the length of the run (docs/testing.md).
hogs=()
for _ in $(seq 1 "${OPTLOG_TEST_HOGS:-0}"); do
  sh -c 'while :; do :; done' &
  hogs+=($!)
done
[ ${#hogs[@]} -eq 0 ] || { log "started ${#hogs[@]} CPU hogs (pids ${hogs[*]})"; trap 'kill "${hogs[@]}" 2>/dev/null || true' EXIT; }

REPORTS=${OPTLOG_TEST_REPORTS:-$(mktemp -d)}
# One pass: the ten slowest tests (--durations) and the time per folder after it. Exit code 5 (no
# test selected) is a failure with its own message: a pass that selects nothing has lost its rule.
pass() {
  local name=$1; shift
  local start=$SECONDS rc=0
  # worksteal: a worker that runs out takes queued tests from the other, so one minute-long test
  # near the end does not leave a core idle while its queue waits (xdist's default hands out fixed chunks)
  .venv/bin/python -m pytest -q -n "$JOBS" --dist worksteal -p no:cacheprovider --durations=10 \
    --junitxml="$REPORTS/$name.xml" "$@" tests || rc=$?
  log "pass $name: $((SECONDS - start)) s (exit $rc); time per folder:"
  [ -f "$REPORTS/$name.xml" ] && .venv/bin/python scripts/test_times.py "$REPORTS/$name.xml" $((SECONDS - start)) >&2
  if [ $rc -eq 5 ]; then log "ERROR: pass $name selected no test"; fi
  return $rc
}

status=0
log "pass 1: SQLite (every test)"
( unset OPTLOG_TEST_PG; pass sqlite ) || status=$?
if [ -n "${OPTLOG_TEST_PG:-}" ]; then
  # What reaches the database under test: the `db` marker, which tests/conftest.py gives every test
  # whose fixtures lead to it (ws, make_ws, db_env, ...). The rest ran identically in pass 1, and so
  # did the `realserver` and `process_path` tests (llama-server's path, signals, process trees,
  # executors: their writes are the launches' writes, made by the same store calls run here).
  log "pass 2: PostgreSQL ($OPTLOG_TEST_PG): the tests marked db, but not realserver or process_path"
  pass postgresql -m "db and not sqlite_only and not realserver and not process_path" || status=$?
else
  log "pass 2 skipped: no PostgreSQL (run as root, or set OPTLOG_TEST_PG)"
fi
exit $status
