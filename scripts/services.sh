#!/usr/bin/env bash
# Make sure PostgreSQL and Redis answer on 127.0.0.1 (start them when installed but stopped).
set -u
ok=1

pg_up() { pg_isready -h 127.0.0.1 -p 5432 -q 2>/dev/null || python3 - <<'PY' 2>/dev/null
import socket; socket.create_connection(("127.0.0.1", 5432), 2)
PY
}
redis_up() { redis-cli -h 127.0.0.1 -p 6379 ping 2>/dev/null | grep -q PONG; }

if ! pg_up; then
  if command -v pg_ctlcluster >/dev/null 2>&1 && [ -d /etc/postgresql ]; then
    echo "PostgreSQL is not answering on 127.0.0.1:5432; starting it"
    pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql | head -n1)" main start || true
    for _ in $(seq 1 30); do pg_up && break; sleep 1; done
  fi
  pg_up || { echo "PostgreSQL is not installed or will not start: the tests need it on 127.0.0.1:5432 (user postgres, trust auth)"; ok=0; }
fi

if ! redis_up; then
  if command -v redis-server >/dev/null 2>&1; then
    echo "Redis is not answering on 127.0.0.1:6379; starting it"
    redis-server --daemonize yes --bind 127.0.0.1 --port 6379 --save "" --appendonly no >/dev/null || true
    for _ in $(seq 1 20); do redis_up && break; sleep 0.5; done
  fi
  redis_up || { echo "Redis is not installed or will not start: the tests need it on 127.0.0.1:6379"; ok=0; }
fi

[ "$ok" = 1 ] || exit 1
echo "PostgreSQL and Redis answer on 127.0.0.1"
