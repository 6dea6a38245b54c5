# 十三支 settlement service: migrates the database, then serves with gunicorn.
#
#   mkdir -m 700 -p secrets && openssl genpkey -algorithm ed25519 -out secrets/thirteen-audit-signing-key.pem && chmod 644 secrets/thirteen-audit-signing-key.pem
#   docker build -t thirteen .
#   docker run --rm -p 8000:8000 \
#     -e MIGRATIONS_DATABASE_URL=postgresql://thirteen_owner:PASSWORD@db:5432/thirteen \
#     -e DATABASE_URL=postgresql://thirteen_service:PASSWORD@db:5432/thirteen \
#     -v "$PWD/secrets/thirteen-audit-signing-key.pem:/run/secrets/thirteen-audit-signing-key.pem:ro" \
#     thirteen
#
# The first line makes the audit signing key once (Ed25519, PKCS#8 PEM): keep it and back it
# up, it signs every receipt. Its folder is the owner's alone (700); the file itself is
# readable (644) so that the container's user 10001 can read it through the bind mount,
# which keeps the host's owner and mode. MIGRATIONS_DATABASE_URL is the tables' owner
# (migrations run as it), DATABASE_URL a login granted the runtime role (the service runs as
# it and refuses the owner or a superuser); both are required: an embedded database inside
# a container would vanish with it. gunicorn.conf.py reads HOST, PORT, WEB_CONCURRENCY,
# GUNICORN_THREADS; the app reads the rest (docs/operations/configuration.md).
# The base is pinned by digest, so a rebuild gets the same image; to move to a newer one,
# `docker buildx imagetools inspect python:3.11-slim-bookworm` and replace the digest.
FROM python:3.11-slim-bookworm@sha256:a36c24f9cbdf4fd0f52d67f0823eeac19c2028c637cecc392d97f980d4fec56b

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    HOST=0.0.0.0 \
    PORT=8000 \
    AUDIT_SIGNING_KEY_FILE=/run/secrets/thirteen-audit-signing-key.pem \
    AUDIT_PUBLIC_KEYS_FILE=/srv/thirteen/var/audit-public-keys.json

WORKDIR /srv/thirteen

RUN groupadd --system --gid 10001 thirteen \
    && useradd --system --uid 10001 --gid 10001 --no-create-home \
       --shell /usr/sbin/nologin thirteen

# Dependencies before the code, from the hash-pinned lock (no pgserver: DATABASE_URL is
# required here), so this layer is rebuilt only when the lock changes.
COPY requirements.lock ./
RUN pip install --no-cache-dir --require-hashes -r requirements.lock

COPY pyproject.toml README.md ./
COPY app ./app
RUN pip install --no-cache-dir --no-deps . \
    && rm -rf build ./*.egg-info

COPY alembic.ini gunicorn.conf.py openapi.yaml ./
COPY migrations ./migrations

# Code and migrations stay owned by root: the service cannot rewrite itself. var/ is the
# service's own, for the console's session key that is made there when SECRET_KEY is unset
# (give SECRET_KEY to every replica instead when several serve the console).
RUN mkdir -p var && chown 10001:10001 var && chmod 0700 var
USER 10001:10001
EXPOSE 8000

# Readiness, not liveness: /readyz answers 503 (urlopen raises) while the database or its
# schema is not there, so an orchestrator stops routing to this container meanwhile.
HEALTHCHECK --interval=10s --timeout=3s --start-period=20s --retries=3 \
    CMD ["python", "-c", "import os, urllib.request; urllib.request.urlopen('http://127.0.0.1:' + os.environ['PORT'] + '/readyz', timeout=2)"]

# Migrate first (migrations/env.py holds an advisory lock, so replicas starting together
# take turns), then exec so gunicorn is PID 1 and receives docker stop's SIGTERM.
# Migrates as MIGRATIONS_DATABASE_URL (the tables' owner), then serves as DATABASE_URL (a
# login granted the runtime role). gunicorn's master checks before any worker starts
# (app/preflight.py) and exits 2 naming the setting: a missing signing key, a role that is
# the owner or a superuser, or a login outside the runtime role. Its asyncio workers hold
# slow and idle clients without a thread (docs/operations/running.md).
CMD ["sh", "-c", ": \"${DATABASE_URL:?set DATABASE_URL to the runtime login's PostgreSQL URL}\" && : \"${MIGRATIONS_DATABASE_URL:?set MIGRATIONS_DATABASE_URL to the owner's PostgreSQL URL}\" && alembic upgrade head && exec gunicorn --config gunicorn.conf.py 'app:create_app()'"]
