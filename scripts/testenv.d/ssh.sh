# Service "ssh": a real OpenSSH server (Debian's openssh-server) on loopback,
# listening on 127.0.0.1 to 127.0.0.4 so the names are four "hosts" for
# the ssh launcher's tests (GPUACCEPT_SSH_HOSTS names the first two,
# GPUACCEPT_SSH_HOSTS4 all four, for tests that need more than a pair), with
# a throwaway host key, a throwaway client key and key-only root login.
# Open MPI (openmpi-bin) comes along: the launcher starts collective steps
# with mpirun across the names. Sourced by
# scripts/testenv.sh; everything lives under .testenv/ssh.
ssh_port=17822

up_ssh() {
	need_apt openssh-server openssh-client openmpi-bin procps
	local d=$state/ssh
	stop_pid ssh
	rm -rf "$d"
	mkdir -p "$d" /run/sshd
	chmod 700 "$d"
	ssh-keygen -q -t ed25519 -N '' -C gpuaccept-testenv-host -f "$d/host_ed25519"
	ssh-keygen -q -t ed25519 -N '' -C gpuaccept-testenv-client -f "$d/client_ed25519"
	cp "$d/client_ed25519.pub" "$d/authorized_keys"
	local hk
	hk=$(cut -d' ' -f1,2 "$d/host_ed25519.pub")
	local a
	for a in 1 2 3 4; do printf '[127.0.0.%s]:%s %s\n' "$a" "$ssh_port" "$hk"; done >"$d/known_hosts"
	# Absolute paths only: sshd re-executes itself and needs them.
	cat >"$d/sshd_config" <<CONF
Port $ssh_port
ListenAddress 127.0.0.1
ListenAddress 127.0.0.2
ListenAddress 127.0.0.3
ListenAddress 127.0.0.4
HostKey $d/host_ed25519
PidFile $d/sshd.pid
AuthorizedKeysFile $d/authorized_keys
PermitRootLogin prohibit-password
PubkeyAuthentication yes
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
StrictModes no
MaxStartups 100:30:200
MaxSessions 100
LogLevel ERROR
CONF
	/usr/sbin/sshd -t -f "$d/sshd_config"
	/usr/sbin/sshd -D -e -f "$d/sshd_config" </dev/null >>"$d/sshd.log" 2>&1 &
	started ssh $!
	local i h
	for h in 127.0.0.2 127.0.0.4; do
		for i in $(seq 50); do
			if ssh -p "$ssh_port" -i "$d/client_ed25519" -o BatchMode=yes -o IdentitiesOnly=yes \
				-o UserKnownHostsFile="$d/known_hosts" -o StrictHostKeyChecking=yes -o ConnectTimeout=2 \
				"root@$h" true 2>/dev/null; then
				break
			fi
			[ "$i" = 50 ] && { echo "testenv: sshd on $h did not accept the client key; see $d/sshd.log" >&2; return 1; }
			sleep 0.2
		done
	done
	setenv GPUACCEPT_SSH_PORT "$ssh_port"
	setenv GPUACCEPT_SSH_USER root
	setenv GPUACCEPT_SSH_KEY "$d/client_ed25519"
	setenv GPUACCEPT_SSH_KNOWN_HOSTS "$d/known_hosts"
	setenv GPUACCEPT_SSH_HOSTS 127.0.0.1,127.0.0.2
	setenv GPUACCEPT_SSH_HOSTS4 127.0.0.1,127.0.0.2,127.0.0.3,127.0.0.4
	setenv GPUACCEPT_MPIRUN "$(command -v mpirun)"
}
