# 十三支 settlement service: migrates the database, then serves with gunicorn.
#
#   docker build -t thirteen .
#   docker run --rm -p 8000:8000 -e DATABASE_URL=postgresql://user:pass@db:5432/thirteen thirteen
#
# DATABASE_URL is required here: an embedded database inside a container would vanish with
# it. gunicorn.conf.py reads HOST, PORT, WEB_CONCURRENCY, GUNICORN_THREADS; the app reads
# the rest of the README's variables.
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    HOST=0.0.0.0 \
    PORT=8000 \
    AUDIT_SIGNING_KEY_FILE=/run/secrets/thirteen-audit-signing-key.pem

WORKDIR /srv/thirteen

COPY pyproject.toml README.md ./
COPY app ./app
RUN pip install . \
    && useradd --system --uid 10001 --no-create-home --shell /usr/sbin/nologin thirteen

COPY alembic.ini gunicorn.conf.py openapi.yaml ./
COPY migrations ./migrations

# Code and migrations stay owned by root: the service cannot rewrite itself.
USER thirteen
EXPOSE 8000

HEALTHCHECK --interval=10s --timeout=3s --start-period=20s --retries=3 \
    CMD ["python", "-c", "import os, urllib.request; urllib.request.urlopen('http://127.0.0.1:' + os.environ['PORT'] + '/healthz', timeout=2)"]

# Migrate first (migrations/env.py holds an advisory lock, so replicas starting together
# take turns), then exec so gunicorn is PID 1 and receives docker stop's SIGTERM.
# Migrates as MIGRATIONS_DATABASE_URL (the tables' owner), then serves as DATABASE_URL (a
# login granted the runtime role); the service refuses to run as the owner or a superuser.
CMD ["sh", "-c", ": \"${DATABASE_URL:?set DATABASE_URL to the runtime login's PostgreSQL URL}\" && : \"${MIGRATIONS_DATABASE_URL:?set MIGRATIONS_DATABASE_URL to the owner's PostgreSQL URL}\" && alembic upgrade head && exec gunicorn --config gunicorn.conf.py 'app:create_app()'"]
