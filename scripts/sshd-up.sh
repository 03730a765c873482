#!/usr/bin/env bash
# Start a private sshd on 127.0.0.1 for the SSH executor tests (root only; idempotent).
# Writes its files under ${OPTLOG_SSHD_DIR:-/tmp/optlog-sshd}: host key, a client key allowed to log
# in as the current user, sshd_config, and env.sh with the variables the tests read:
#   OPTLOG_TEST_SSH_HOST, OPTLOG_TEST_SSH_PORT, OPTLOG_TEST_SSH_USER, OPTLOG_TEST_SSH_KEY
set -euo pipefail
DIR=${OPTLOG_SSHD_DIR:-/tmp/optlog-sshd}
PORT=${OPTLOG_SSHD_PORT:-2222}
mkdir -p "$DIR" /run/sshd
chmod 700 "$DIR"
[ -f "$DIR/host_ed25519" ] || ssh-keygen -q -t ed25519 -N '' -f "$DIR/host_ed25519"
[ -f "$DIR/client_ed25519" ] || ssh-keygen -q -t ed25519 -N '' -f "$DIR/client_ed25519"
USER_NAME=$(id -un)
HOME_DIR=$(getent passwd "$USER_NAME" | cut -d: -f6)
mkdir -p "$HOME_DIR/.ssh"
chmod 700 "$HOME_DIR/.ssh"
touch "$HOME_DIR/.ssh/authorized_keys"
grep -qF "$(cat "$DIR/client_ed25519.pub")" "$HOME_DIR/.ssh/authorized_keys" || cat "$DIR/client_ed25519.pub" >> "$HOME_DIR/.ssh/authorized_keys"
chmod 600 "$HOME_DIR/.ssh/authorized_keys"
cat > "$DIR/sshd_config" <<CONF
Port $PORT
ListenAddress 127.0.0.1
HostKey $DIR/host_ed25519
PidFile $DIR/sshd.pid
PermitRootLogin prohibit-password
PasswordAuthentication no
PubkeyAuthentication yes
AuthorizedKeysFile .ssh/authorized_keys
UsePAM no
StrictModes no
PermitUserEnvironment yes
AcceptEnv LANG LC_* OPTLOG_* CUDA_* NCCL_*
MaxStartups 100:30:200
MaxSessions 100
Subsystem sftp internal-sftp
CONF
if [ -f "$DIR/sshd.pid" ] && kill -0 "$(cat "$DIR/sshd.pid")" 2>/dev/null; then
  :
else
  /usr/sbin/sshd -f "$DIR/sshd_config" -E "$DIR/sshd.log"
fi
for _ in $(seq 1 50); do
  ssh -q -i "$DIR/client_ed25519" -p "$PORT" -o BatchMode=yes -o StrictHostKeyChecking=no \
      -o UserKnownHostsFile=/dev/null "$USER_NAME@127.0.0.1" true 2>/dev/null && break
  sleep 0.2
done
cat > "$DIR/env.sh" <<ENV
export OPTLOG_TEST_SSH_HOST=127.0.0.1
export OPTLOG_TEST_SSH_PORT=$PORT
export OPTLOG_TEST_SSH_USER=$USER_NAME
export OPTLOG_TEST_SSH_KEY=$DIR/client_ed25519
ENV
echo "sshd-up: ready on 127.0.0.1:$PORT (env: $DIR/env.sh)"
