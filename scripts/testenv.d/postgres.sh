# Service "postgres": a real PostgreSQL (Debian's postgresql package) on
# loopback for framework/history's store tests. Sourced by
# scripts/testenv.sh.
#
# One cluster made with initdb in a temp folder, owned by and run as an
# unprivileged user (PostgreSQL refuses to run as root: nobody when this
# script runs as root, else the caller), listening on 127.0.0.1:17880 only,
# no Unix socket, trust authentication for loopback: nothing but this
# machine reaches it. fsync is off: the tests need no durability across a
# power cut, and it halves the benchmark's insert time.
#
# Variables for the tests: GPUACCEPT_TEST_POSTGRES, the superuser's URL
# (postgres://postgres@127.0.0.1:17880/postgres?sslmode=disable); each test
# makes and drops its own database through it.
#
# Cold, "up postgres" takes about a minute (measured 2026-12-08 on a
# Debian 12 machine with 2 busy cores): apt-get install of postgresql and
# what it pulls (postgresql-15 needs libllvm14 and libicu72; 20 packages,
# 61 MB) downloads in about 25 s and unpacks and configures in 13 to 40 s;
# initdb and start take under a second. Warm (installed), under a second.

postgres_port=17880

postgres_state() { echo "$state/postgres"; }

up_postgres() {
	need_apt postgresql
	local bin d data user
	bin=$(find /usr/lib/postgresql -maxdepth 2 -name bin -type d | sort -V | tail -1)
	if [ -z "$bin" ]; then
		echo "testenv: postgres: no /usr/lib/postgresql/*/bin after installing postgresql" >&2
		return 1
	fi
	down_postgres
	user=$(id -un)
	[ "$(id -u)" != 0 ] || user=nobody
	d=$(mktemp -d /tmp/gpuaccept-postgres.XXXXXX)
	mkdir -p "$(postgres_state)"
	echo "$d" >"$(postgres_state)/dir"
	echo "$user" >"$(postgres_state)/user"
	data=$d/data
	chown "$user" "$d"
	postgres_as "$user" "$bin/initdb" -D "$data" -U postgres --auth=trust --no-sync -E UTF8 >"$d/initdb.log" 2>&1
	postgres_as "$user" "$bin/pg_ctl" -D "$data" -l "$d/postgres.log" -w -t 60 start \
		-o "-c listen_addresses=127.0.0.1 -p $postgres_port -c unix_socket_directories='' -c fsync=off -c max_connections=200" >/dev/null
	started postgres "$(head -1 "$data/postmaster.pid")"
	setenv GPUACCEPT_TEST_POSTGRES "postgres://postgres@127.0.0.1:$postgres_port/postgres?sslmode=disable"
}

# postgres_as USER CMD...: run CMD as USER (runuser when root).
postgres_as() {
	local user=$1
	shift
	if [ "$(id -u)" = 0 ]; then
		(cd / && runuser -u "$user" -- "$@")
	else
		(cd / && "$@")
	fi
}

down_postgres() {
	local s d user bin
	s=$(postgres_state)
	[ -e "$s/dir" ] || return 0
	d=$(cat "$s/dir")
	user=$(cat "$s/user")
	bin=$(find /usr/lib/postgresql -maxdepth 2 -name bin -type d | sort -V | tail -1)
	if [ -e "$d/data/postmaster.pid" ] && [ -n "$bin" ]; then
		postgres_as "$user" "$bin/pg_ctl" -D "$d/data" -m fast -w stop >/dev/null 2>&1 || true
	fi
	stop_pid postgres
	case $d in /tmp/gpuaccept-postgres.*) rm -rf "$d" ;; esac
	rm -f "$s/dir" "$s/user"
}
