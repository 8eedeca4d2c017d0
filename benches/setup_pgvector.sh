#!/usr/bin/env bash
# setup_pgvector.sh — make pgvector 0.8.x usable with the machine's PostgreSQL (Debian, 15 by
# default), as a benchmark peer for benches/pgvector_peer.py. Idempotent: a second run that finds
# the extension installed only checks it.
#
# pgvector is not packaged for Debian bookworm, so this builds it from Debian's own source
# tarball (the trixie package's pgvector_0.8.0.orig.tar.gz, pinned by SHA-256 below; the same
# checksum is in Debian's signed pgvector_0.8.0-1.dsc) against postgresql-server-dev-NN (apt):
#   1. headers: apt-get install -y postgresql-server-dev-$PG_MAJOR  (if pgxs.mk is missing).
#      Caveat: apt may upgrade postgresql-$PG_MAJOR / libpq to the headers' minor release.
#   2. source: $PGVECTOR_TARBALL if set, else the cached copy, else a download from
#      https://deb.debian.org/debian/pool/main/p/pgvector/pgvector_0.8.0.orig.tar.gz, else
#      `apt-get source --download-only pgvector=0.8.0-1` through a temporary trixie deb-src list
#      (the system's apt sources are not touched). The SHA-256 is checked in every case.
#   3. make OPTFLAGS="" && make install  (OPTFLAGS="" drops pgvector's -march=native).
#   4. check: a throwaway cluster (run as the `postgres` user) does CREATE EXTENSION vector and
#      an HNSW query.
#
# Usage: benches/setup_pgvector.sh [--force] [--no-check]
#   --force     rebuild and reinstall even if the extension is already there
#   --no-check  skip step 4
# Environment: PG_MAJOR (15), PG_CONFIG (/usr/lib/postgresql/$PG_MAJOR/bin/pg_config),
#   PGVECTOR_URL (another mirror of the same file), PGVECTOR_CACHE (~/.cache/chrono_engine/pgvector),
#   PGVECTOR_TARBALL (a local tarball; it must match the pinned SHA-256 unless PGVECTOR_SHA256
#   names another one).
# Needs root (apt-get, make install into the system's PostgreSQL directories).
set -euo pipefail

PGVECTOR_VERSION=0.8.0
PGVECTOR_DEB_REVISION=0.8.0-1
PGVECTOR_URL="${PGVECTOR_URL:-https://deb.debian.org/debian/pool/main/p/pgvector/pgvector_${PGVECTOR_VERSION}.orig.tar.gz}"
PINNED_SHA256=867a2c328d4928a5a9d6f052cd3bc78c7d60228a9b914ad32aa3db88e9de27b0
EXPECTED_SHA256="${PGVECTOR_SHA256:-$PINNED_SHA256}"

PG_MAJOR="${PG_MAJOR:-15}"
PG_CONFIG="${PG_CONFIG:-/usr/lib/postgresql/${PG_MAJOR}/bin/pg_config}"
CACHE="${PGVECTOR_CACHE:-${HOME:-/root}/.cache/chrono_engine/pgvector}"
FORCE=0
CHECK=1
for arg in "$@"; do
    case "$arg" in
        --force) FORCE=1 ;;
        --no-check) CHECK=0 ;;
        -h|--help) sed -n '2,/^[^#]/{/^#/p}' "$0"; exit 0 ;;
        *) echo "setup_pgvector: unknown argument: $arg" >&2; exit 2 ;;
    esac
done

say() { echo "setup_pgvector: $*"; }
die() { echo "setup_pgvector: ERROR: $*" >&2; exit 1; }

[ -x "$PG_CONFIG" ] || die "no pg_config at $PG_CONFIG (is postgresql-$PG_MAJOR installed? set PG_CONFIG or PG_MAJOR)"
BINDIR="$("$PG_CONFIG" --bindir)"
SHAREDIR="$("$PG_CONFIG" --sharedir)"
PKGLIBDIR="$("$PG_CONFIG" --pkglibdir)"
CONTROL="$SHAREDIR/extension/vector.control"
say "PostgreSQL: $("$PG_CONFIG" --version) (pg_config $PG_CONFIG)"

installed_version() {
    [ -f "$CONTROL" ] && [ -f "$PKGLIBDIR/vector.so" ] || return 1
    sed -n "s/^default_version *= *'\(.*\)'/\1/p" "$CONTROL"
}

check_extension() {
    # A throwaway cluster owned by the postgres user (initdb refuses root), on a unix socket
    # in its own directory only, runs CREATE EXTENSION and an HNSW-indexed query.
    local runas=()
    if [ "$(id -u)" = 0 ]; then
        id postgres >/dev/null 2>&1 || die "the check needs a 'postgres' system user to run the server as"
        runas=(runuser -u postgres --)
    fi
    local tmp
    tmp="$(mktemp -d /tmp/pgvector_check.XXXXXX)"
    [ "$(id -u)" = 0 ] && chown postgres: "$tmp"
    # shellcheck disable=SC2064
    trap "${runas[*]} '$BINDIR/pg_ctl' -D '$tmp/data' -m immediate stop >/dev/null 2>&1 || true; rm -rf '$tmp'" EXIT
    "${runas[@]}" "$BINDIR/initdb" -D "$tmp/data" -A trust -U postgres >/dev/null \
        || die "initdb failed (check: $tmp)"
    "${runas[@]}" "$BINDIR/pg_ctl" -D "$tmp/data" -l "$tmp/log" -w \
        -o "-c listen_addresses='' -c unix_socket_directories='$tmp'" start >/dev/null \
        || { cat "$tmp/log" >&2; die "the check's server did not start"; }
    local out
    out="$("${runas[@]}" "$BINDIR/psql" -h "$tmp" -U postgres -d postgres -XAtq -v ON_ERROR_STOP=1 <<'SQL'
CREATE EXTENSION vector;
CREATE TABLE t (id int, e vector(3));
INSERT INTO t SELECT i, ARRAY[cos(i), sin(i), 1]::vector FROM generate_series(1, 200) i;
CREATE INDEX ON t USING hnsw (e vector_cosine_ops) WITH (m = 16, ef_construction = 64);
SET enable_seqscan = off;
SET hnsw.iterative_scan = relaxed_order;
SELECT extversion FROM pg_extension WHERE extname = 'vector';
SELECT id FROM t ORDER BY e <=> '[1,0,1]' LIMIT 1;
SQL
)" || die "CREATE EXTENSION vector / HNSW query failed: $out"
    say "check: extension version $(echo "$out" | sed -n 1p), nearest id to [1,0,1] = $(echo "$out" | sed -n 2p) (HNSW, iterative scan)"
}

have="$(installed_version || true)"
if [ -n "$have" ] && [ "$FORCE" = 0 ]; then
    case "$have" in
        0.8.*) say "pgvector $have is already installed ($CONTROL, $PKGLIBDIR/vector.so); nothing to build (--force rebuilds)"
               [ "$CHECK" = 1 ] && check_extension
               say "done"; exit 0 ;;
        *) say "pgvector $have is installed; installing $PGVECTOR_VERSION over it" ;;
    esac
fi

[ "$(id -u)" = 0 ] || die "building needs root (apt-get, make install into $PKGLIBDIR); rerun as root"
command -v make >/dev/null && command -v gcc >/dev/null || die "needs make and gcc (apt-get install -y build-essential)"

# 1. server headers (pgxs)
PGXS="$("$PG_CONFIG" --pgxs)"
if [ ! -f "$PGXS" ]; then
    say "installing postgresql-server-dev-$PG_MAJOR (apt-get) for $PGXS"
    export DEBIAN_FRONTEND=noninteractive
    apt-get install -y "postgresql-server-dev-$PG_MAJOR" \
        || { apt-get update && apt-get install -y "postgresql-server-dev-$PG_MAJOR"; } \
        || die "apt-get install postgresql-server-dev-$PG_MAJOR failed"
    [ -f "$PGXS" ] || die "postgresql-server-dev-$PG_MAJOR is installed but $PGXS is missing"
else
    say "server headers present ($PGXS)"
fi

# 2. the source tarball
mkdir -p "$CACHE"
TARBALL="$CACHE/pgvector_${PGVECTOR_VERSION}.orig.tar.gz"
sha_ok() { [ -f "$1" ] && [ "$(sha256sum "$1" | cut -d' ' -f1)" = "$EXPECTED_SHA256" ]; }

if [ -n "${PGVECTOR_TARBALL:-}" ]; then
    sha_ok "$PGVECTOR_TARBALL" || die "$PGVECTOR_TARBALL does not match SHA-256 $EXPECTED_SHA256"
    TARBALL="$PGVECTOR_TARBALL"
    say "using $TARBALL (sha256 ok)"
elif sha_ok "$TARBALL"; then
    say "using the cached $TARBALL (sha256 ok)"
else
    rm -f "$TARBALL"
    say "downloading $PGVECTOR_URL"
    if command -v curl >/dev/null; then
        curl -fsSL --retry 2 -m 120 -o "$TARBALL.part" "$PGVECTOR_URL" || say "download failed"
    else
        wget -q -T 120 -O "$TARBALL.part" "$PGVECTOR_URL" || say "download failed"
    fi
    if sha_ok "$TARBALL.part"; then
        mv "$TARBALL.part" "$TARBALL"
    else
        [ -f "$TARBALL.part" ] && say "the download does not match SHA-256 $EXPECTED_SHA256; discarded"
        rm -f "$TARBALL.part"
        say "trying apt-get source pgvector=$PGVECTOR_DEB_REVISION (temporary trixie deb-src list)"
        apt_dir="$(mktemp -d /tmp/pgvector_apt.XXXXXX)"
        mkdir -p "$apt_dir/lists/partial" "$apt_dir/dl"
        echo "deb-src http://deb.debian.org/debian trixie main" > "$apt_dir/sources.list"
        apt_opts=(-o "Dir::Etc::sourcelist=$apt_dir/sources.list" -o "Dir::Etc::sourceparts=-"
                  -o "Dir::State::lists=$apt_dir/lists" -o "APT::Sandbox::User=root")
        if apt-get "${apt_opts[@]}" update >/dev/null \
            && (cd "$apt_dir/dl" && apt-get "${apt_opts[@]}" source --download-only "pgvector=$PGVECTOR_DEB_REVISION" >/dev/null) \
            && sha_ok "$apt_dir/dl/pgvector_${PGVECTOR_VERSION}.orig.tar.gz"; then
            mv "$apt_dir/dl/pgvector_${PGVECTOR_VERSION}.orig.tar.gz" "$TARBALL"
        fi
        rm -rf "$apt_dir"
        sha_ok "$TARBALL" || die "could not get pgvector_${PGVECTOR_VERSION}.orig.tar.gz with SHA-256 $EXPECTED_SHA256
  (tried $PGVECTOR_URL and apt-get source). Put the file somewhere and rerun with PGVECTOR_TARBALL=/path/to/it"
    fi
    say "got $TARBALL (sha256 $EXPECTED_SHA256 ok)"
fi

# 3. build and install
BUILD="$(mktemp -d /tmp/pgvector_build.XXXXXX)"
trap 'rm -rf "$BUILD"' EXIT
tar -xzf "$TARBALL" -C "$BUILD"
SRC="$(find "$BUILD" -mindepth 1 -maxdepth 1 -type d | head -1)"
[ -f "$SRC/vector.control" ] || die "the tarball has no vector.control"
say "building $(basename "$SRC") (make -j2 OPTFLAGS=\"\")"
make -C "$SRC" -j2 OPTFLAGS="" PG_CONFIG="$PG_CONFIG" >"$BUILD/make.log" 2>&1 \
    || { tail -30 "$BUILD/make.log" >&2; die "make failed"; }
make -C "$SRC" install OPTFLAGS="" PG_CONFIG="$PG_CONFIG" >"$BUILD/install.log" 2>&1 \
    || { tail -30 "$BUILD/install.log" >&2; die "make install failed"; }
rm -rf "$BUILD"
trap - EXIT
have="$(installed_version)" || die "make install finished but $CONTROL / $PKGLIBDIR/vector.so are missing"
say "installed pgvector $have into $PKGLIBDIR and $SHAREDIR/extension"

# 4. check
[ "$CHECK" = 1 ] && check_extension
say "done"
