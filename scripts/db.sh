#!/usr/bin/env bash
# `make db`: a team store on this machine. Installs Debian's PostgreSQL if it is missing, starts its
# cluster, and creates the database "quorum" with its login role "quorum" (the schema's owner) and the
# group roles a team signs in under (quorum_viewer, quorum_operator, quorum_admin).
# The password is made here, once, and kept in ~/.pgpass (mode 0600), never in the repository, a URL or a
# log. Prints the store's URL last. Idempotent: a second run finds everything in place.
#   --if-possible   as `make test` calls it: where PostgreSQL cannot be had (not root, no apt), say so and
#                   exit 0; the tests that need it then skip (and fail under CI=true).
set -euo pipefail
MAYBE=0
[[ "${1:-}" == "--if-possible" ]] && MAYBE=1
DB=quorum
ROLE=quorum
HOST=127.0.0.1
PORT=${QUORUM_PG_PORT:-5432}

give_up() {
    echo "make db: $1" >&2
    if [[ $MAYBE == 1 ]]; then
        echo "make db: the PostgreSQL store tests will be skipped" >&2
        exit 0
    fi
    exit 1
}

if ! command -v pg_lsclusters >/dev/null 2>&1; then
    [[ $(id -u) == 0 ]] || give_up "PostgreSQL is not installed; as root: apt-get install postgresql"
    command -v apt-get >/dev/null 2>&1 || give_up "PostgreSQL is not installed and there is no apt-get here"
    echo "make db: installing Debian's postgresql" >&2
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq >/dev/null
    apt-get install -y -qq postgresql >/dev/null
fi

cluster=$(pg_lsclusters -h | awk 'NR==1 {print $1" "$2}')
[[ -n "$cluster" ]] || give_up "no PostgreSQL cluster found (pg_lsclusters lists none)"
read -r version name <<<"$cluster"
if ! pg_lsclusters -h | awk 'NR==1 {print $4}' | grep -q online; then
    [[ $(id -u) == 0 ]] || give_up "cluster $version/$name is down; as root: pg_ctlcluster $version $name start"
    pg_ctlcluster "$version" "$name" start
fi
PORT=$(pg_lsclusters -h | awk 'NR==1 {print $3}')

# SQL on stdin, as the cluster's superuser, in database $1.
as_postgres() {
    if [[ $(id -u) == 0 ]]; then
        su postgres -c "psql -v ON_ERROR_STOP=1 -qAt -p $PORT -d $1"
    else
        psql -v ON_ERROR_STOP=1 -qAt -p "$PORT" -d "$1"
    fi
}

PGPASS="${PGPASSFILE:-$HOME/.pgpass}"
touch "$PGPASS"
chmod 600 "$PGPASS"
if ! grep -q "^$HOST:$PORT:\*:$ROLE:" "$PGPASS"; then
    secret=$(head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n')
    echo "$HOST:$PORT:*:$ROLE:$secret" >>"$PGPASS"
fi
secret=$(grep "^$HOST:$PORT:\*:$ROLE:" "$PGPASS" | head -1 | cut -d: -f5)

# Over stdin: the password never shows in a process list.
as_postgres postgres <<SQL
DO \$\$
BEGIN
    IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = '$ROLE') THEN
        CREATE ROLE $ROLE LOGIN CREATEROLE;
    END IF;
    IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'quorum_viewer') THEN CREATE ROLE quorum_viewer NOLOGIN; END IF;
    IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'quorum_operator') THEN CREATE ROLE quorum_operator NOLOGIN; END IF;
    IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'quorum_admin') THEN CREATE ROLE quorum_admin NOLOGIN; END IF;
END
\$\$;
ALTER ROLE $ROLE PASSWORD '$secret';
SQL
if [[ -z $(echo "SELECT 1 FROM pg_database WHERE datname = '$DB'" | as_postgres postgres) ]]; then
    echo "CREATE DATABASE $DB OWNER $ROLE" | as_postgres postgres
fi
echo "postgresql://$ROLE@$HOST:$PORT/$DB"
